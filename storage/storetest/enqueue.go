package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

var enqueueTests = []test{
	{"Enqueue_J1_RoundTripsEveryString", testEnqueueRoundTripsEveryString},
	{"Enqueue_J1_RoundTripsRandomStrings", testEnqueueRoundTripsRandomStrings},
	{"Enqueue_J2_DuplicatesWithinAndAcrossPastes", testEnqueueDuplicatesWithinAndAcrossPastes},
	{"Enqueue_J2_ConcurrentPastesEachReportTheirOwn", testEnqueueConcurrentPastes},
	{"Enqueue_J2_DuplicateInEveryState", testEnqueueDuplicateInEveryState},
	{"Enqueue_J2_R5_AgainQueuesOnlyEndedJobs", testEnqueueAgainQueuesOnlyEndedJobs},
	{"Enqueue_J2_W3_ReportsEachInputByKey", testEnqueueReportsEachInputByKey},
	{"Enqueue_R5_AgainOnlyBelowTheBound", testEnqueueAgainOnlyBelowTheBound},
}

// checkEnqueue enqueues in and checks the result against what Enqueue promises, byte for byte:
// each input's report, and each new job as stored. known maps each key the store has to its
// job's id, as the test's earlier writes made them; checkEnqueue adds the keys it queues.
func checkEnqueue(t *testing.T, s engine.Store, known map[string]int64, in []engine.NewJob) []engine.Enqueued {
	t.Helper()
	pre := map[string]engine.Job{} // what each key had before the call
	for _, nj := range in {
		if id, ok := known[nj.Key]; ok {
			j, err := s.Job(bg, id)
			require.NoError(t, err)
			pre[nj.Key] = j
		}
	}
	from := time.Now()
	res, err := s.Enqueue(bg, in, noAgain)
	to := time.Now()
	require.NoError(t, err)
	require.Len(t, res, len(in))
	first := map[string]engine.Job{} // key → the job this call queued for it
	for i, nj := range in {
		var want engine.Enqueued
		p, had := pre[nj.Key]
		f, queued := first[nj.Key]
		switch {
		case had:
			want = engine.Enqueued{ID: p.ID, Duplicate: true, State: p.State, NotBefore: p.NotBefore}
		case queued:
			want = engine.Enqueued{ID: f.ID, Duplicate: true, State: engine.JobQueued, NotBefore: f.NotBefore}
		default:
			require.False(t, res[i].Duplicate, "input %d %q is new", i, nj.Key)
			j, err := s.Job(bg, res[i].ID)
			require.NoError(t, err, "input %d %q has a job", i, nj.Key)
			first[nj.Key], known[nj.Key] = j, j.ID
			want = engine.Enqueued{ID: j.ID, State: engine.JobQueued, NotBefore: j.NotBefore}
			assert.Equal(t, []byte(nj.URL), []byte(j.URL), "input %d: the URL stored byte for byte", i)
			assert.Equal(t, []byte(nj.Host), []byte(j.Host), "input %d: host", i)
			assert.Equal(t, engine.JobQueued, j.State)
			assertBetween(t, from, to, j.NotBefore, "input %d: due now", i)
		}
		equal(t, want, res[i], "input %d %q", i, nj.Key)
	}
	return res
}

// checkKeyed enqueues in again, which res reported, and checks that each key is stored as given:
// every input is a duplicate of the job its first place queued, and no two keys share a job.
func checkKeyed(t *testing.T, s engine.Store, in []engine.NewJob, res []engine.Enqueued) {
	t.Helper()
	again, err := s.Enqueue(bg, in, noAgain)
	require.NoError(t, err)
	require.Len(t, again, len(in))
	byID := map[int64]string{}
	for i, it := range again {
		assert.True(t, it.Duplicate, "input %d %q is its own job's duplicate", i, in[i].Key)
		assert.Equal(t, res[i].ID, it.ID, "input %d %q: the key as stored matches it, byte for byte", i, in[i].Key)
		if k, ok := byID[it.ID]; ok {
			assert.Equal(t, []byte(k), []byte(in[i].Key), "input %d: two keys, one job", i)
		}
		byID[it.ID] = in[i].Key
	}
}

// oddURLs are strings with something a layer between Go and a database might alter: escapes of
// JSON and SQL as literal text, separators, control characters, NUL, invalid UTF-8, long strings.
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

// J1: every string comes back from the store byte for byte, as URL, key and host, and Enqueue
// reports each input as the stored jobs say.
func testEnqueueRoundTripsEveryString(t *testing.T, o Opener) {
	s := open(t, o)
	var in []engine.NewJob
	for i, u := range oddURLs() {
		host := "a.example"
		if i%3 == 0 {
			host = "h\u2028ö\\\"\x01\x00\xff.example" // odd hosts too
		}
		in = append(in, engine.NewJob{URL: u, Key: "k" + u, Host: host})
	}
	if o.TextOnly {
		_, err := s.Enqueue(bg, in, noAgain)
		require.Error(t, err, "a string with a NUL or not UTF-8 is refused")
		all, err := s.Jobs(bg, engine.JobQuery{})
		require.NoError(t, err)
		require.Empty(t, all, "nothing of the refused call is stored")
		text := in[:0:0]
		for _, nj := range in {
			if isText(nj.URL) && isText(nj.Key) && isText(nj.Host) {
				text = append(text, nj)
			}
		}
		in = text
	}
	res := checkEnqueue(t, s, map[string]int64{}, in)
	checkKeyed(t, s, in, res)
	assertCounts(t, s)
}

// isText reports whether s is valid UTF-8 without a NUL byte.
func isText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// J1: random valid UTF-8 of every plane and every byte but NUL round-trips exactly.
func testEnqueueRoundTripsRandomStrings(t *testing.T, o Opener) {
	s := open(t, o)
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
		if u := b.String(); !seen[u] {
			seen[u] = true
			in = append(in, engine.NewJob{URL: u, Key: u, Host: "h" + fmt.Sprint(len(in)%7)})
		}
	}
	res := checkEnqueue(t, s, map[string]int64{}, in)
	checkKeyed(t, s, in, res)
}

// J2: duplicates within one paste and across pastes, of jobs in every state.
func testEnqueueDuplicatesWithinAndAcrossPastes(t *testing.T, o Opener) {
	s := open(t, o)
	known := map[string]int64{}
	for _, st := range engine.JobStates {
		u := "https://a.example/old-" + string(st)
		known[u] = jobIn(t, s, u, st)
	}
	checkEnqueue(t, s, known, newJobs("a.example", "https://a.example/n1", "https://a.example/n2"))
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
	checkEnqueue(t, s, known, in)
	checkEnqueue(t, s, known, in)
	assertCounts(t, s)
}

// J2: several Enqueues at once (committed together by a group commit) each report their own
// ids, and a URL sent by several of them is queued once.
func testEnqueueConcurrentPastes(t *testing.T, o Opener) {
	s := open(t, o)
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
			res, err := s.Enqueue(bg, in, noAgain)
			ch <- out{in, res, err}
		}()
	}
	queued := map[string]int{}
	for range n {
		o := <-ch
		require.NoError(t, o.err)
		require.Len(t, o.res, len(o.in))
		for i, it := range o.res {
			j, err := s.Job(bg, it.ID)
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
	assert.Equal(t, engine.Counts{Queued: int64(len(queued))}, totalCounts(t, s))
}

// J2: a URL whose job is queued, active, paused, done, failed, cancelled or skipped is reported as
// a duplicate, with its job's id, state and not-before, and the job is left alone.
func testEnqueueDuplicateInEveryState(t *testing.T, o Opener) {
	s := open(t, o)
	for _, st := range engine.JobStates {
		t.Run(string(st), func(t *testing.T) {
			url := "https://a.example/" + string(st)
			id := jobIn(t, s, url, st)
			before, err := s.Job(bg, id)
			require.NoError(t, err)
			res, err := s.Enqueue(bg, newJobs("a.example", url), noAgain)
			require.NoError(t, err)
			equal(t, []engine.Enqueued{{ID: id, Duplicate: true, State: st, NotBefore: before.NotBefore}}, res)
			after, err := s.Job(bg, id)
			require.NoError(t, err)
			equal(t, before, after, "a duplicate leaves the job alone")
		})
	}
	assertCounts(t, s)
}

// J2, R5: asked to (againBelow above its id), a duplicate whose job has ended (done, failed,
// cancelled, skipped) is queued again, due now, with a fresh attempt budget, and reported as it
// was; a live one is left alone.
func testEnqueueAgainQueuesOnlyEndedJobs(t *testing.T, o Opener) {
	s := open(t, o)
	for _, st := range engine.JobStates {
		t.Run(string(st), func(t *testing.T) {
			url := "https://a.example/" + string(st)
			id := jobIn(t, s, url, st)
			before, err := s.Job(bg, id)
			require.NoError(t, err)
			from := time.Now()
			res, err := s.Enqueue(bg, newJobs("a.example", url, url), allAgain)
			to := time.Now()
			require.NoError(t, err)
			require.Len(t, res, 2)
			after, err := s.Job(bg, id)
			require.NoError(t, err)
			if !st.Ended() {
				equal(t, engine.Enqueued{ID: id, Duplicate: true, State: st, NotBefore: before.NotBefore}, res[0])
				equal(t, before, after, "a live job is not queued again")
				return
			}
			later := after.NotBefore
			assertBetween(t, from, to, later, "queued again, due now")
			equal(t, engine.Enqueued{ID: id, Duplicate: true, State: st, NotBefore: later, Again: true}, res[0])
			equal(t, engine.Enqueued{ID: id, Duplicate: true, State: engine.JobQueued, NotBefore: later}, res[1],
				"the same URL again in the paste finds it queued")
			assert.Equal(t, engine.JobQueued, after.State)
			assert.Zero(t, after.Attempts, "fresh attempt budget")
			assert.Zero(t, after.Throttled)
			assert.Empty(t, after.LastError)
			assert.Zero(t, after.LastStatus)
			assert.Empty(t, after.File)
			assert.Empty(t, after.SHA256)
		})
	}
	assertCounts(t, s)
}

// J2, W3: duplicates are told apart by key, not by URL: a URL written another way with the same
// key is the same job, and the job keeps the URL as first given. Acknowledged means committed
// (S2): the Reader lists the jobs at once.
func testEnqueueReportsEachInputByKey(t *testing.T, o Opener) {
	s := open(t, o)
	old := enqueueURLs(t, s, "a.example", "https://a.example/old")[0]
	oldJob, err := s.Job(bg, old)
	require.NoError(t, err)
	from := time.Now()
	res, err := s.Enqueue(bg, []engine.NewJob{
		{URL: "https://a.example/1", Key: "https://a.example/1", Host: "a.example"},
		{URL: "https://a.example/old", Key: "https://a.example/old", Host: "a.example"},
		{URL: "https://b.example/2", Key: "https://b.example/2", Host: "b.example"},
		{URL: "https://a.example/1", Key: "https://a.example/1", Host: "a.example"},           // twice in one paste
		{URL: "HTTPS://A.EXAMPLE:443/1", Key: "https://a.example/1", Host: "a.example"},       // the same key
		{URL: "https://a.example/1#frag", Key: "https://a.example/1#frag", Host: "a.example"}, // another key
	}, noAgain)
	to := time.Now()
	require.NoError(t, err)
	require.Len(t, res, 6)
	j, err := s.Job(bg, res[0].ID)
	require.NoError(t, err)
	now := j.NotBefore
	assertBetween(t, from, to, now, "due now")
	equal(t, engine.Enqueued{ID: res[0].ID, State: engine.JobQueued, NotBefore: now}, res[0])
	equal(t, engine.Enqueued{ID: old, Duplicate: true, State: engine.JobQueued, NotBefore: oldJob.NotBefore}, res[1])
	assert.False(t, res[2].Duplicate)
	equal(t, engine.Enqueued{ID: res[0].ID, Duplicate: true, State: engine.JobQueued, NotBefore: now}, res[3])
	equal(t, engine.Enqueued{ID: res[0].ID, Duplicate: true, State: engine.JobQueued, NotBefore: now}, res[4])
	assert.False(t, res[5].Duplicate)
	assert.NotEqual(t, res[0].ID, res[5].ID)

	assert.Equal(t, "https://a.example/1", j.URL, "the URL as first given, fetched as written")
	assert.Equal(t, "a.example", j.Host)
	assert.Equal(t, engine.JobQueued, j.State)
	assertBetween(t, from, to, j.CreatedAt, "created now")
	assertBetween(t, from, to, j.UpdatedAt, "updated now")
	assert.Equal(t, int64(-1), j.Size, "size unknown")
	assert.Zero(t, j.Attempts)
	assert.Empty(t, j.Part)

	all, err := s.Jobs(bg, engine.JobQuery{})
	require.NoError(t, err)
	assert.Len(t, all, 4, "committed when Enqueue returns")
	assert.Equal(t, engine.Counts{Queued: 4}, totalCounts(t, s))

	none, err := s.Enqueue(bg, nil, noAgain)
	require.NoError(t, err)
	assert.Empty(t, none)
}

// R5: againBelow bounds which ended duplicates are queued again: those whose id is below it (the
// jobs that were there before the paste), not the job of its own id or any after it, and none at 0.
func testEnqueueAgainOnlyBelowTheBound(t *testing.T, o Opener) {
	s := open(t, o)
	ids := make([]int64, 4)
	for i := range ids {
		ids[i] = jobIn(t, s, fmt.Sprintf("https://a.example/%d", i), engine.JobDone)
	}
	require.IsIncreasing(t, ids, "ids grow with each new job")
	urls := []string{"https://a.example/0", "https://a.example/1", "https://a.example/2", "https://a.example/3"}

	res, err := s.Enqueue(bg, newJobs("a.example", urls...), noAgain)
	require.NoError(t, err)
	for i, it := range res {
		assert.False(t, it.Again, "0: none is queued again (%d)", i)
		assert.Equal(t, engine.JobDone, it.State)
	}

	res, err = s.Enqueue(bg, newJobs("a.example", urls...), ids[2])
	require.NoError(t, err)
	require.Len(t, res, 4)
	for i, it := range res {
		assert.Equal(t, ids[i], it.ID)
		assert.True(t, it.Duplicate)
		assert.Equal(t, engine.JobDone, it.State, "reported as it was")
		assert.Equal(t, i < 2, it.Again, "job %d, bound %d", it.ID, ids[2])
		j, err := s.Job(bg, it.ID)
		require.NoError(t, err)
		if i < 2 {
			assert.Equal(t, engine.JobQueued, j.State)
			assert.Zero(t, j.Attempts, "fresh budget")
		} else {
			assert.Equal(t, engine.JobDone, j.State, "at or above the bound: left alone")
			assert.Equal(t, 1, j.Attempts)
		}
	}
	assertCounts(t, s)
}
