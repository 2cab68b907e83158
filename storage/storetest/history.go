package storetest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

var historyTests = []test{
	{"History_S3_KeepsEveryAttemptNewestFirst", testHistoryKeepsEveryAttemptNewestFirst},
	{"History_S3_U6_KeysetPagingReadsEachOnce", testHistoryKeysetPagingReadsEachOnce},
	{"Export_S9_HistoryOverTheStore", testExportHistoryOverTheStore},
	{"Export_S9_JobsOverTheStore", testExportJobsOverTheStore},
}

// historyFixture records attempts on two hosts and returns them in the order recorded.
func historyFixture(t *testing.T, s engine.Store) []engine.Attempt {
	t.Helper()
	a := enqueueURLs(t, s, "a.example", "https://a.example/x?q=1&r=<2>")[0]
	b := enqueueURLs(t, s, "b.example", "https://b.example/y")[0]
	t0 := time.Unix(1_700_000_000, 123456789)
	in := []engine.Attempt{
		{JobID: a, URL: "https://a.example/x?q=1&r=<2>", Host: "a.example", Attempt: 1, Throttled: 0, StartedAt: t0,
			Duration: 1500 * time.Microsecond, Status: 429, Outcome: "throttled", Error: "too many, \"slow\"\ndown",
			RetryAfter: 30 * time.Second, Level: 1, Breaker: engine.Closed},
		{JobID: b, URL: "https://b.example/y", Host: "b.example", Attempt: 1, StartedAt: t0.Add(time.Second),
			Duration: time.Second, Status: 503, Outcome: "retry", Level: 0, Breaker: engine.Open},
		{JobID: a, URL: "https://a.example/x?q=1&r=<2>", Host: "a.example", Attempt: 1, Throttled: 1,
			StartedAt: t0.Add(2 * time.Second), Duration: 2 * time.Second, Status: 200, Outcome: "ok", Bytes: 4096,
			Level: 2, Breaker: engine.HalfOpen},
	}
	for _, x := range in {
		require.NoError(t, s.RecordAttempt(x))
	}
	require.NoError(t, s.Flush(bg))
	return in
}

func attemptIDs(as []engine.Attempt) []int64 {
	var out []int64
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// S3: history keeps every field of every attempt, newest first, filtered by host, outcome and job
// and paged by id.
func testHistoryKeepsEveryAttemptNewestFirst(t *testing.T, o Opener) {
	s := open(t, o)
	in := historyFixture(t, s)

	got, err := s.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	require.Len(t, got, len(in))
	for i, g := range got {
		want := in[len(in)-1-i]
		assert.NotZero(t, g.ID)
		want.ID = g.ID
		equal(t, want, g, "every field is kept")
	}

	cases := []struct {
		name string
		q    engine.HistoryQuery
		want []int64
	}{
		{"host", engine.HistoryQuery{Host: "a.example"}, []int64{got[0].ID, got[2].ID}},
		{"outcome", engine.HistoryQuery{Outcome: "retry"}, []int64{got[1].ID}},
		{"another outcome, a page on", engine.HistoryQuery{Outcome: "throttled", BeforeID: got[1].ID}, []int64{got[2].ID}},
		{"successes", engine.HistoryQuery{Outcome: "ok"}, []int64{got[0].ID}},
		{"host and outcome", engine.HistoryQuery{Host: "a.example", Outcome: "ok"}, []int64{got[0].ID}},
		{"host and another outcome", engine.HistoryQuery{Host: "a.example", Outcome: "throttled"}, []int64{got[2].ID}},
		{"job", engine.HistoryQuery{JobID: in[1].JobID}, []int64{got[1].ID}},
		{"job and host", engine.HistoryQuery{JobID: in[1].JobID, Host: "a.example"}, nil},
		{"first page", engine.HistoryQuery{Limit: 2}, []int64{got[0].ID, got[1].ID}},
		{"next page", engine.HistoryQuery{BeforeID: got[1].ID, Limit: 2}, []int64{got[2].ID}},
		{"past the end", engine.HistoryQuery{BeforeID: got[2].ID}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := s.History(bg, c.q)
			require.NoError(t, err)
			assert.Equal(t, c.want, attemptIDs(page))
		})
	}
}

// S3, U6: paging through a long history by BeforeID reads every attempt once, newest first.
func testHistoryKeysetPagingReadsEachOnce(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/1")[0]
	const n = 250
	for i := range n {
		outcome := "ok"
		if i%3 == 0 {
			outcome = "retry"
		}
		require.NoError(t, s.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "a.example", Attempt: i, Outcome: outcome}))
	}
	require.NoError(t, s.Flush(bg))
	for _, outcome := range []string{"", "ok", "retry"} {
		var seen []int
		q := engine.HistoryQuery{Outcome: outcome, Limit: 32}
		for {
			page, err := s.History(bg, q)
			require.NoError(t, err)
			for _, a := range page {
				seen = append(seen, a.Attempt)
			}
			if len(page) < q.Limit {
				break
			}
			q.BeforeID = page[len(page)-1].ID
		}
		var want []int
		for i := n - 1; i >= 0; i-- {
			if outcome == "" || (outcome == "retry") == (i%3 == 0) {
				want = append(want, i)
			}
		}
		assert.Equal(t, want, seen, "outcome %q", outcome)
	}
}

// S9, U6: the exports read the store through the engine's Reader: what the store keeps comes out
// in the lines (JSON and CSV), started_at to the nanosecond. (The shapes themselves are the
// engine's, tested in engine/export_test.go.)
func testExportHistoryOverTheStore(t *testing.T, o Opener) {
	s := open(t, o)
	in := historyFixture(t, s)

	var buf bytes.Buffer
	require.NoError(t, engine.WriteHistoryJSON(bg, &buf, s, engine.HistoryQuery{Host: "a.example"}))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var oldest map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &oldest))
	assert.Equal(t, "2023-11-14T22:13:20.123456789Z", oldest["started_at"])
	assert.Equal(t, 1.5, oldest["duration_ms"])
	assert.Equal(t, 30000.0, oldest["retry_after_ms"])
	assert.Equal(t, 429.0, oldest["status"])
	assert.Equal(t, "throttled", oldest["outcome"])
	assert.Equal(t, in[0].URL, oldest["url"])
	assert.Equal(t, in[0].Error, oldest["error"])
	assert.Equal(t, "closed", oldest["breaker_state"])
	assert.Equal(t, 1.0, oldest["backoff_level"])
	assert.Equal(t, float64(in[0].JobID), oldest["job_id"])
	var newest map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &newest))
	assert.Equal(t, "half-open", newest["breaker_state"])
	assert.Equal(t, 1.0, newest["throttled"])
	assert.Equal(t, 4096.0, newest["bytes"])

	buf.Reset()
	require.NoError(t, engine.WriteHistoryCSV(bg, &buf, s, engine.HistoryQuery{}))
	recs, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, len(in)+1)
	assert.Equal(t, engine.HistoryCSVHeader, recs[0])
	col := func(rec []string, name string) string {
		for i, h := range engine.HistoryCSVHeader {
			if h == name {
				return rec[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	last := recs[len(recs)-1]
	assert.Equal(t, in[0].Error, col(last, "error"), "commas, quotes and newlines survive")
	assert.Equal(t, "2023-11-14T22:13:20.123456789Z", col(last, "started_at"))
	assert.Equal(t, "open", col(recs[2], "breaker_state"))
}

// S9: a job export says which done job has yet to take its final name, until it has it.
func testExportJobsOverTheStore(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/f")[0]
	enqueueURLs(t, s, "b.example", "https://b.example/q")
	_, err := s.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobDone, File: "f", SHA256: "aa", Status: 200,
		Resume: engine.Resume{Part: "f.part", Bytes: 1, Size: 1}}))
	line := func() map[string]any {
		t.Helper()
		var buf bytes.Buffer
		require.NoError(t, engine.WriteJobsJSON(bg, &buf, s, engine.JobQuery{State: engine.JobDone}))
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, 1)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
		return m
	}
	m := line()
	assert.Equal(t, float64(id), m["id"])
	assert.Equal(t, "done", m["state"])
	assert.Equal(t, "f", m["file"])
	assert.Equal(t, "aa", m["sha256"])
	assert.Equal(t, 1.0, m["attempts"])
	assert.Equal(t, true, m["unnamed"])
	require.NoError(t, s.Named(id))
	require.NoError(t, s.Flush(bg))
	assert.NotContains(t, line(), "unnamed")
}
