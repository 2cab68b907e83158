package storage

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// jobByKey returns the job whose de-duplication key is key, and whether there is one.
func jobByKey(t testing.TB, db *DB, key string) (engine.Job, bool) {
	t.Helper()
	var id int64
	err := db.r.QueryRow(`SELECT id FROM jobs WHERE key = ?`, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Job{}, false
	}
	require.NoError(t, err)
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	return j, true
}

// checkEnqueue enqueues in at now (the DB's clock) and checks the result against what Enqueue
// promises, byte for byte: each input's report, and each new job's stored row.
func checkEnqueue(t *testing.T, db *DB, now time.Time, in []engine.NewJob) []engine.Enqueued {
	t.Helper()
	pre := map[string]engine.Job{} // what each key had before the call
	for _, nj := range in {
		if j, ok := jobByKey(t, db, nj.Key); ok {
			pre[nj.Key] = j
		}
	}
	res, err := db.Enqueue(bg, in, noAgain)
	require.NoError(t, err)
	require.Len(t, res, len(in))
	first := map[string]int{} // key → the input that queued it
	for i, nj := range in {
		j, ok := jobByKey(t, db, nj.Key)
		require.True(t, ok, "input %d %q has a job", i, nj.Key)
		var want engine.Enqueued
		switch p, had := pre[nj.Key]; {
		case had:
			want = engine.Enqueued{ID: p.ID, Duplicate: true, State: p.State, NotBefore: p.NotBefore}
		case first[nj.Key] > 0:
			want = engine.Enqueued{ID: j.ID, Duplicate: true, State: engine.JobQueued, NotBefore: now}
		default:
			first[nj.Key] = i + 1
			want = engine.Enqueued{ID: j.ID, State: engine.JobQueued, NotBefore: now}
			assert.Equal(t, []byte(nj.URL), []byte(j.URL), "input %d: the URL stored byte for byte", i)
			assert.Equal(t, []byte(nj.Host), []byte(j.Host), "input %d: host", i)
			var key []byte
			require.NoError(t, db.r.QueryRow(`SELECT key FROM jobs WHERE id = ?`, j.ID).Scan(&key))
			assert.Equal(t, []byte(nj.Key), key, "input %d: key", i)
			assert.Equal(t, engine.JobQueued, j.State)
			assert.True(t, now.Equal(j.NotBefore), "input %d: due now", i)
		}
		assert.Equal(t, want, res[i], "input %d %q", i, nj.Key)
	}
	return res
}

// oddURLs are strings with something a layer between Go and SQLite might alter: escapes of JSON
// and SQL as literal text, separators, control characters, NUL, invalid UTF-8, long strings.
func oddURLs() []string {
	us := []string{
		`https://a.example/\u0041`,       // a JSON escape as literal text
		`https://a.example/\\u0041`,      // backslashes before it
		`https://a.example/\u00`,         // a cut escape
		`https://a.example/\ud83d\ude00`, // a surrogate pair escape as text
		`https://a.example/\x41\0\'\v`,   // JSON5 escapes as text
		`https://a.example/\/slash`,      // an escaped slash as text
		`https://a.example/"quoted"`,     // quotes
		"https://a.example/'single'; DROP TABLE jobs; --",
		"https://a.example/\u2028\u2029", // line and paragraph separators
		"https://a.example/\x7f",         // DEL
		"https://a.example/\ufeff\ufffe\uffff",
		"https://a.example/\U0001F600\U0010FFFF", // astral, the last code point
		"https://a.example/\ufffd",
		"https://a.example/e\u0301", // combining
		"https://a.example/tab\there",
		"https://a.example/cr\r\nlf",
		"https://a.example/trailing\\",
		"https://a.example/ \x1b[31m",
		"https://a.example/ünïcödé/日本語",
		"https://a.example/é\x00x", // NUL after a character that is not ASCII
		"https://a.example/nul\x00",
		"https://a.example/\xff\xfe", // not UTF-8
		"https://a.example/\xc3",     // a cut sequence
		"https://a.example/" + strings.Repeat("x", 200_000),
		"https://a.example/" + strings.Repeat("é\\\"", 30_000),
		"0", "1e5", "-1", "true", "null", "[]", "{}", `"`, " ", "", // strings that read as values
		"https://a.example/end",
	}
	var every []byte
	for c := 1; c < 0x100; c++ {
		every = append(every, byte(c))
		us = append(us, "https://b.example/"+string([]byte{byte(c)}))
	}
	us = append(us, "https://b.example/all"+string(every))
	return us
}

// J1: every string comes back from the database byte for byte, as URL, key and host, and Enqueue
// reports each input as the stored rows say.
func TestEnqueue_J1_RoundTripsEveryString(t *testing.T) {
	now := time.Unix(1_700_000_000, 5)
	db, _ := openTest(t, withClock(newClock(now)))
	var in []engine.NewJob
	for i, u := range oddURLs() {
		host := "a.example"
		if i%3 == 0 {
			host = "h\u2028ö\\\"\x01\x00\xff.example" // odd hosts too
		}
		in = append(in, engine.NewJob{URL: u, Key: "k" + u, Host: host})
	}
	checkEnqueue(t, db, now, in)
	assertCounts(t, db)
}

// J1: random valid UTF-8 of every plane and every byte but NUL round-trips exactly.
func TestEnqueue_J1_RoundTripsRandomStrings(t *testing.T) {
	now := time.Unix(1_700_000_000, 5)
	db, _ := openTest(t, withClock(newClock(now)))
	rnd := rand.New(rand.NewPCG(7, 9))
	seen := map[string]bool{}
	var in []engine.NewJob
	for len(in) < 5_000 {
		var b strings.Builder
		b.WriteString("u")
		for range rnd.IntN(40) {
			var r rune
			switch rnd.IntN(4) {
			case 0:
				r = rune(1 + rnd.IntN(0x7f))
			case 1:
				r = rune(0x80 + rnd.IntN(0x800-0x80))
			case 2:
				r = rune(0x800 + rnd.IntN(0x10000-0x800))
			default:
				r = rune(0x10000 + rnd.IntN(0x110000-0x10000))
			}
			if r >= 0xd800 && r < 0xe000 {
				continue
			}
			b.WriteRune(r)
		}
		if s := b.String(); !seen[s] {
			seen[s] = true
			in = append(in, engine.NewJob{URL: s, Key: s, Host: "h" + fmt.Sprint(len(in)%7)})
		}
	}
	checkEnqueue(t, db, now, in)
}

// J2: duplicates within one paste and across pastes, of jobs in every state.
func TestEnqueue_J2_DuplicatesWithinAndAcrossPastes(t *testing.T) {
	now := time.Unix(1_700_000_000, 5)
	db, _ := openTest(t, withClock(newClock(now)))
	for _, s := range engine.JobStates {
		jobIn(t, db, "https://a.example/old-"+string(s), s)
	}
	checkEnqueue(t, db, now, newJobs("a.example", "https://a.example/n1", "https://a.example/n2"))
	var in []engine.NewJob
	for i := range 50 {
		in = append(in, newJobs("c.example", "https://c.example/"+string(rune('A'+i%17)))...)
		if i%7 == 0 {
			in = append(in, newJobs("a.example", "https://a.example/old-"+string(engine.JobStates[i%len(engine.JobStates)]))...)
		}
		if i%11 == 0 {
			in = append(in, newJobs("a.example", "https://a.example/n1")...)
		}
	}
	checkEnqueue(t, db, now, in)
	checkEnqueue(t, db, now, in)
	assertCounts(t, db)
}

// A database whose largest id is at or near the largest rowid: SQLite gives the next rows random
// ids, smaller than the largest before. Each new job is still reported queued with its own id.
func TestEnqueue_J2_NearLargestRowid(t *testing.T) {
	for _, top := range []int64{math.MaxInt64 - 1, math.MaxInt64} {
		t.Run(fmt.Sprint(top), func(t *testing.T) {
			now := time.Unix(1_700_000_000, 5)
			db, _ := openTest(t, withClock(newClock(now)))
			require.NoError(t, db.write(bg, "top", func(w *wtx) error {
				_, err := w.exec(`INSERT INTO jobs (id, url, key, host, state, created_at, updated_at)
					VALUES (?, 'https://top.example/', 'https://top.example/', 'top.example', 'done', 1, 1)`, top)
				return err
			}))
			in := newJobs("a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3",
				"https://a.example/1")
			res := checkEnqueue(t, db, now, in)
			assert.NotEqual(t, res[0].ID, res[1].ID)
			assert.NotEqual(t, res[1].ID, res[2].ID)
			assert.Equal(t, res[0].ID, res[3].ID)
		})
	}
}

// Several Enqueues committed together (group commit) each report their own ids, and a URL sent
// by several of them is queued once.
func TestEnqueue_J2_ConcurrentPastesEachReportTheirOwn(t *testing.T) {
	db, _ := openTest(t)
	const n = 8
	type out struct {
		in  []engine.NewJob
		res []engine.Enqueued
		err error
	}
	ch := make(chan out, n)
	for k := range n {
		go func() {
			var urls []string
			for i := range 200 {
				u := fmt.Sprintf("https://s.example/%d", i)
				if i%2 == 0 {
					u = fmt.Sprintf("https://o.example/%d/%d", k, i)
				}
				urls = append(urls, u)
			}
			in := newJobs("x.example", urls...)
			res, err := db.Enqueue(bg, in, noAgain)
			ch <- out{in, res, err}
		}()
	}
	queued := map[string]int{}
	for range n {
		o := <-ch
		require.NoError(t, o.err)
		require.Len(t, o.res, len(o.in))
		for i, it := range o.res {
			j, err := db.Job(bg, it.ID)
			require.NoError(t, err)
			assert.Equal(t, o.in[i].URL, j.URL)
			if !it.Duplicate {
				queued[j.URL]++
			}
		}
	}
	assert.Len(t, queued, 200/2+n*200/2)
	for u, c := range queued {
		assert.Equal(t, 1, c, "%s queued once", u)
	}
	counts, err := db.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: int64(len(queued))}, counts)
}

// J2: a URL whose job is queued, active, paused, done, failed, cancelled or skipped is reported as
// a duplicate, with its job's id, state and not-before, and the job is left alone.
func TestEnqueue_J2_DuplicateInEveryState(t *testing.T) {
	db, _ := openTest(t)
	for _, s := range engine.JobStates {
		t.Run(string(s), func(t *testing.T) {
			url := "https://a.example/" + string(s)
			id := jobIn(t, db, url, s)
			before, err := db.Job(bg, id)
			require.NoError(t, err)
			res, err := db.Enqueue(bg, newJobs("a.example", url), noAgain)
			require.NoError(t, err)
			assert.Equal(t, []engine.Enqueued{{ID: id, Duplicate: true, State: s, NotBefore: before.NotBefore}}, res)
			after, err := db.Job(bg, id)
			require.NoError(t, err)
			assert.Equal(t, before, after, "a duplicate leaves the job alone")
		})
	}
	assertCounts(t, db)
}

// J2, R5: asked to (againBelow above its id), a duplicate whose job has ended (done, failed,
// cancelled, skipped) is queued again, due now, with a fresh attempt budget, and reported as it
// was; a live one is left alone.
func TestEnqueue_J2_AgainQueuesOnlyEndedJobs(t *testing.T) {
	clock := newClock(time.Unix(1_700_000_000, 0))
	db, _ := openTest(t, withClock(clock))
	for i, s := range engine.JobStates {
		t.Run(string(s), func(t *testing.T) {
			url := "https://a.example/" + string(s)
			id := jobIn(t, db, url, s)
			before, err := db.Job(bg, id)
			require.NoError(t, err)
			later := time.Unix(1_700_000_100+int64(i), 0)
			clock.Set(later)
			res, err := db.Enqueue(bg, newJobs("a.example", url, url), allAgain)
			require.NoError(t, err)
			require.Len(t, res, 2)
			after, err := db.Job(bg, id)
			require.NoError(t, err)
			if !s.Ended() {
				assert.Equal(t, engine.Enqueued{ID: id, Duplicate: true, State: s, NotBefore: before.NotBefore}, res[0])
				assert.Equal(t, before, after, "a live job is not queued again")
				return
			}
			assert.Equal(t, engine.Enqueued{ID: id, Duplicate: true, State: s, NotBefore: later, Again: true}, res[0])
			assert.Equal(t, engine.Enqueued{ID: id, Duplicate: true, State: engine.JobQueued, NotBefore: later}, res[1],
				"the same URL again in the paste finds it queued")
			assert.Equal(t, engine.JobQueued, after.State)
			assert.True(t, later.Equal(after.NotBefore))
			assert.Zero(t, after.Attempts, "fresh attempt budget")
			assert.Zero(t, after.Throttled)
			assert.Empty(t, after.LastError)
			assert.Zero(t, after.LastStatus)
			assert.Empty(t, after.File)
			assert.Empty(t, after.SHA256)
		})
	}
	assertCounts(t, db)
}

// J2, W3: duplicates are told apart by key, not by URL: a URL written another way with the same
// key is the same job, and the job keeps the URL as first given.
func TestEnqueue_J2_ReportsEachInputByKey(t *testing.T) {
	now := time.Unix(1_700_000_000, 5)
	db, path := openTest(t, withClock(newClock(now)))
	old := enqueueURLs(t, db, "a.example", "https://a.example/old")[0]
	res, err := db.Enqueue(bg, []engine.NewJob{
		{URL: "https://a.example/1", Key: "https://a.example/1", Host: "a.example"},
		{URL: "https://a.example/old", Key: "https://a.example/old", Host: "a.example"},
		{URL: "https://b.example/2", Key: "https://b.example/2", Host: "b.example"},
		{URL: "https://a.example/1", Key: "https://a.example/1", Host: "a.example"},           // twice in one paste
		{URL: "HTTPS://A.EXAMPLE:443/1", Key: "https://a.example/1", Host: "a.example"},       // the same key
		{URL: "https://a.example/1#frag", Key: "https://a.example/1#frag", Host: "a.example"}, // another key
	}, noAgain)
	require.NoError(t, err)
	require.Len(t, res, 6)
	assert.Equal(t, engine.Enqueued{ID: res[0].ID, State: engine.JobQueued, NotBefore: now}, res[0])
	assert.Equal(t, engine.Enqueued{ID: old, Duplicate: true, State: engine.JobQueued, NotBefore: now}, res[1])
	assert.False(t, res[2].Duplicate)
	assert.Equal(t, engine.Enqueued{ID: res[0].ID, Duplicate: true, State: engine.JobQueued, NotBefore: now}, res[3])
	assert.Equal(t, engine.Enqueued{ID: res[0].ID, Duplicate: true, State: engine.JobQueued, NotBefore: now}, res[4])
	assert.False(t, res[5].Duplicate)
	assert.NotEqual(t, res[0].ID, res[5].ID)

	j, err := db.Job(bg, res[0].ID)
	require.NoError(t, err)
	assert.Equal(t, "https://a.example/1", j.URL, "the URL as first given, fetched as written")
	assert.Equal(t, "a.example", j.Host)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.True(t, now.Equal(j.NotBefore))
	assert.True(t, now.Equal(j.CreatedAt))
	assert.True(t, now.Equal(j.UpdatedAt))
	assert.Equal(t, int64(-1), j.Size, "size unknown")
	assert.Zero(t, j.Attempts)
	assert.Empty(t, j.Part)

	// Acknowledged means committed (S2): another connection sees the jobs at once.
	var n int
	require.NoError(t, rawOpenRO(t, path).QueryRow(`SELECT count(*) FROM jobs`).Scan(&n))
	assert.Equal(t, 4, n)
	counts, err := db.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: 4}, counts)

	none, err := db.Enqueue(bg, nil, noAgain)
	require.NoError(t, err)
	assert.Empty(t, none)
}

// R5: againBelow bounds which ended duplicates are queued again: those whose id is below it (the
// jobs that were there before the paste), not the job of its own id or any after it, and none at 0.
func TestEnqueue_R5_AgainOnlyBelowTheBound(t *testing.T) {
	db, _ := openTest(t)
	ids := make([]int64, 4)
	for i := range ids {
		ids[i] = jobIn(t, db, fmt.Sprintf("https://a.example/%d", i), engine.JobDone)
	}
	urls := []string{"https://a.example/0", "https://a.example/1", "https://a.example/2", "https://a.example/3"}

	res, err := db.Enqueue(bg, newJobs("a.example", urls...), noAgain)
	require.NoError(t, err)
	for i, it := range res {
		assert.False(t, it.Again, "0: none is queued again (%d)", i)
		assert.Equal(t, engine.JobDone, it.State)
	}

	res, err = db.Enqueue(bg, newJobs("a.example", urls...), ids[2])
	require.NoError(t, err)
	require.Len(t, res, 4)
	for i, it := range res {
		assert.Equal(t, ids[i], it.ID)
		assert.True(t, it.Duplicate)
		assert.Equal(t, engine.JobDone, it.State, "reported as it was")
		assert.Equal(t, i < 2, it.Again, "job %d, bound %d", it.ID, ids[2])
		j, err := db.Job(bg, it.ID)
		require.NoError(t, err)
		if i < 2 {
			assert.Equal(t, engine.JobQueued, j.State)
			assert.Zero(t, j.Attempts, "fresh budget")
		} else {
			assert.Equal(t, engine.JobDone, j.State, "at or above the bound: left alone")
			assert.Equal(t, 1, j.Attempts)
		}
	}
	assertCounts(t, db)
}
