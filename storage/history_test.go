package storage

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// historyFixture records attempts on two hosts and returns them in the order recorded.
func historyFixture(t *testing.T, db *DB) []Attempt {
	t.Helper()
	a := enqueueURLs(t, db, "a.example", "https://a.example/x?q=1&r=<2>")[0]
	b := enqueueURLs(t, db, "b.example", "https://b.example/y")[0]
	t0 := time.Unix(1_700_000_000, 123456789)
	in := []Attempt{
		{JobID: a, URL: "https://a.example/x?q=1&r=<2>", Host: "a.example", Attempt: 1, StartedAt: t0, Duration: 1500 * time.Microsecond,
			Status: 429, Outcome: "throttled", Error: "too many, \"slow\"\ndown", RetryAfter: 30 * time.Second, BackoffLevel: 1, BreakerState: "closed"},
		{JobID: b, URL: "https://b.example/y", Host: "b.example", Attempt: 1, StartedAt: t0.Add(time.Second), Duration: time.Second,
			Status: 503, Outcome: "retry", BackoffLevel: 0, BreakerState: "open"},
		{JobID: a, URL: "https://a.example/x?q=1&r=<2>", Host: "a.example", Attempt: 2, StartedAt: t0.Add(2 * time.Second), Duration: 2 * time.Second,
			Status: 200, Outcome: "ok", Bytes: 4096, BackoffLevel: 0, BreakerState: "closed"},
	}
	for _, x := range in {
		require.NoError(t, db.RecordAttempt(x))
	}
	require.NoError(t, db.Flush(bg))
	return in
}

func TestHistory_S3_KeepsEveryAttemptNewestFirst(t *testing.T) {
	db, _ := openTest(t)
	in := historyFixture(t, db)

	got, err := db.HistoryPage(bg, HistoryFilter{})
	require.NoError(t, err)
	require.Len(t, got, len(in))
	for i, g := range got {
		want := in[len(in)-1-i]
		assert.NotZero(t, g.ID)
		assert.True(t, want.StartedAt.Equal(g.StartedAt))
		g.ID, g.StartedAt, want.StartedAt = 0, time.Time{}, time.Time{}
		assert.Equal(t, want, g, "every field is kept")
	}

	ids := func(as []Attempt) []int64 {
		var out []int64
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    HistoryFilter
		want []int64
	}{
		{"host", HistoryFilter{Host: "a.example"}, []int64{got[0].ID, got[2].ID}},
		{"outcome", HistoryFilter{Outcome: "retry"}, []int64{got[1].ID}},
		{"another outcome, a page on", HistoryFilter{Outcome: "throttled", BeforeID: got[1].ID}, []int64{got[2].ID}},
		{"successes", HistoryFilter{Outcome: "ok"}, []int64{got[0].ID}},
		{"host and outcome", HistoryFilter{Host: "a.example", Outcome: "ok"}, []int64{got[0].ID}},
		{"job", HistoryFilter{JobID: in[1].JobID}, []int64{got[1].ID}},
		{"first page", HistoryFilter{Limit: 2}, []int64{got[0].ID, got[1].ID}},
		{"next page", HistoryFilter{BeforeID: got[1].ID, Limit: 2}, []int64{got[2].ID}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := db.HistoryPage(bg, c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, ids(page))
		})
	}
}

func TestExportHistoryJSON_S9_OneObjectPerLine(t *testing.T) {
	db, _ := openTest(t)
	in := historyFixture(t, db)
	var buf bytes.Buffer
	require.NoError(t, db.ExportHistoryJSON(bg, &buf, HistoryFilter{Host: "a.example"}))

	wantKeys := append([]string(nil), HistoryCSVHeader...)
	sort.Strings(wantKeys)
	sc := bufio.NewScanner(&buf)
	var lines []map[string]any
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		assert.Equal(t, wantKeys, keys)
		lines = append(lines, m)
	}
	require.Len(t, lines, 2)
	first := lines[1] // newest first: the oldest a.example attempt is last
	started, err := time.Parse(time.RFC3339Nano, first["started_at"].(string))
	require.NoError(t, err)
	assert.True(t, in[0].StartedAt.Equal(started), "started_at is RFC 3339 with nanoseconds")
	assert.Equal(t, "2023-11-14T22:13:20.123456789Z", first["started_at"])
	assert.Equal(t, 1.5, first["duration_ms"])
	assert.Equal(t, 30000.0, first["retry_after_ms"])
	assert.Equal(t, 429.0, first["status"])
	assert.Equal(t, "throttled", first["outcome"])
	assert.Equal(t, in[0].URL, first["url"])
	assert.Equal(t, in[0].Error, first["error"])
	assert.Equal(t, "closed", first["breaker_state"])
	assert.Equal(t, 1.0, first["backoff_level"])
	assert.Equal(t, float64(in[0].JobID), first["job_id"])
	assert.Equal(t, 1.0, first["attempt"])
	assert.Equal(t, 0.0, first["bytes"])
	assert.Equal(t, "a.example", first["host"])
}

func TestHistoryLine_S9_StartedAtAlwaysHasNineDigits(t *testing.T) {
	for _, tt := range []struct {
		ns   int
		want string
	}{
		{0, "2023-11-14T22:13:20.000000000Z"},
		{550_000_000, "2023-11-14T22:13:20.550000000Z"},
		{557_853_740, "2023-11-14T22:13:20.557853740Z"},
		{1, "2023-11-14T22:13:20.000000001Z"},
	} {
		at := time.Unix(1_700_000_000, int64(tt.ns)).In(time.FixedZone("CET", 3600))
		got := toLine(Attempt{StartedAt: at}).StartedAt
		assert.Equal(t, tt.want, got)
		back, err := time.Parse(time.RFC3339Nano, got)
		require.NoError(t, err)
		assert.True(t, back.Equal(at))
	}
}

func TestExportHistoryCSV_U6_HeaderAndQuotedRows(t *testing.T) {
	db, _ := openTest(t)
	in := historyFixture(t, db)
	var buf bytes.Buffer
	require.NoError(t, db.ExportHistoryCSV(bg, &buf, HistoryFilter{}))
	recs, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, len(in)+1)
	assert.Equal(t, HistoryCSVHeader, recs[0])
	oldest := recs[len(recs)-1]
	col := func(name string) string {
		for i, h := range HistoryCSVHeader {
			if h == name {
				return oldest[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	assert.Equal(t, in[0].Error, col("error"), "commas, quotes and newlines survive")
	assert.Equal(t, in[0].URL, col("url"))
	assert.Equal(t, "1.5", col("duration_ms"))
	assert.Equal(t, "30000", col("retry_after_ms"))
	assert.Equal(t, "2023-11-14T22:13:20.123456789Z", col("started_at"))
	assert.Equal(t, "throttled", col("outcome"))
}

func TestExportJobsJSON_S9_Fields(t *testing.T) {
	db, _ := openTest(t)
	id := jobIn(t, db, "https://a.example/f", StateDone)
	enqueueURLs(t, db, "b.example", "https://b.example/q")
	var buf bytes.Buffer
	require.NoError(t, db.ExportJobsJSON(bg, &buf, JobFilter{State: StateDone}))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
	assert.Equal(t, map[string]any{
		"id": float64(id), "url": "https://a.example/f", "host": "a.example", "state": "done", "file": "f",
		"bytes": 1.0, "sha256": "aa", "attempts": 1.0, "throttled": 0.0, "last_error": "",
	}, m)
}

// A done job whose file has yet to take its name (a crash between the two) says so, until it has
// its name.
func TestExportJobsJSON_UnnamedUntilNamed(t *testing.T) {
	db, _ := openTest(t)
	id := jobIn(t, db, "https://a.example/f", StateActive)
	_, err := db.FinishJobs(bg, []Finish{{Attempt: Attempt{JobID: id, URL: "https://a.example/f", Host: "a.example",
		Attempt: 1, StartedAt: time.Unix(1_800_000_000, 0), Outcome: "ok", Bytes: 3},
		Done: Done{File: "f", Bytes: 3, SHA256: "abc", Status: 200, Held: true}}})
	require.NoError(t, err)
	line := func() map[string]any {
		var buf bytes.Buffer
		require.NoError(t, db.ExportJobsJSON(bg, &buf, JobFilter{}))
		var m map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
		return m
	}
	m := line()
	assert.Equal(t, "done", m["state"])
	assert.Equal(t, true, m["unnamed"])
	require.NoError(t, db.Named([]Named{{JobID: id}}))
	require.NoError(t, db.Flush(bg))
	assert.NotContains(t, line(), "unnamed")
}
