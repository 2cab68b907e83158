package storage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkEnqueue enqueues in and checks the result against what Enqueue promises, byte for byte:
// each input's item, each new job's stored row, and the kept (fresh) job of each new id.
func checkEnqueue(t *testing.T, db *DB, in []NewJob) EnqueueResult {
	t.Helper()
	pre := map[string]Job{} // what each URL had before the call
	for _, nj := range in {
		if j, err := db.JobByURL(bg, nj.URL); err == nil {
			pre[nj.URL] = j
		}
	}
	res, err := db.Enqueue(bg, in)
	require.NoError(t, err)
	require.Len(t, res.Items, len(in))
	seen := map[string]bool{}
	queued, dups := 0, 0
	for i, nj := range in {
		j, err := db.JobByURL(bg, nj.URL)
		require.NoError(t, err, "input %d %q has a job", i, nj.URL)
		require.Equal(t, []byte(nj.URL), []byte(j.URL), "input %d: the URL stored byte for byte", i)
		var want EnqueueItem
		switch p, ok := pre[nj.URL]; {
		case ok:
			want = EnqueueItem{ID: p.ID, Duplicate: true, State: p.State}
		case seen[nj.URL]:
			want = EnqueueItem{ID: j.ID, Duplicate: true, State: StateQueued}
		default:
			want = EnqueueItem{ID: j.ID, State: StateQueued}
			assert.Equal(t, []byte(nj.Host), []byte(j.Host), "input %d: host", i)
			assert.Equal(t, nanos(nj.NotBefore), nanos(j.NotBefore), "input %d: not_before", i)
			db.fresh.mu.Lock()
			f, kept := db.fresh.jobs[j.ID]
			db.fresh.mu.Unlock()
			if kept {
				assert.Equal(t, []byte(nj.URL), []byte(f.url), "input %d: kept job's URL", i)
				assert.Equal(t, nj.Host, f.host, "input %d: kept job's host", i)
				assert.Equal(t, nanos(j.NotBefore), f.notBefore, "input %d: kept job's not_before", i)
			}
		}
		seen[nj.URL] = true
		assert.Equal(t, want, res.Items[i], "input %d %q", i, nj.URL)
		if want.Duplicate {
			dups++
		} else {
			queued++
		}
	}
	assert.Equal(t, queued, res.Queued)
	assert.Equal(t, dups, res.Duplicates)
	return res
}

// oddURLs are URLs exact() accepts, each with something JSON or SQLite's JSON might alter.
func oddURLs() []string {
	us := []string{
		`https://a.example/\u0041`,       // a JSON escape as literal text
		`https://a.example/\\u0041`,      // backslashes before it
		`https://a.example/\u00`,         // a cut escape
		`https://a.example/\ud83d\ude00`, // a surrogate pair escape as text
		`https://a.example/\x41\0\'\v`,   // JSON5 escapes as text
		`https://a.example/\/slash`,      // an escaped slash as text
		`https://a.example/"quoted"`,     // quotes
		"https://a.example/\u2028\u2029", // line and paragraph separators
		"https://a.example/\x7f",         // DEL
		"https://a.example/\ufeff\ufffe\uffff",
		"https://a.example/\U0001F600\U0010FFFF", // astral, the last code point
		"https://a.example/\ufffd",
		"https://a.example/e\u0301", // combining
		"https://a.example/tab\there",
		"https://a.example/cr\r\nlf",
		"https://a.example/trailing\\",
		"https://a.example/'single'",
		"https://a.example/ \x1b[31m",
		"https://a.example/ünïcödé/日本語",
		"https://a.example/" + strings.Repeat("x", 200_000), // a long URL
		"https://a.example/" + strings.Repeat("é\\\"", 30_000),
		"0", "1e5", "-1", "true", "null", "[]", "{}", `"`, " ", // strings that read as JSON values
		"https://a.example/end",
	}
	var every []byte
	for c := 1; c < 0x80; c++ {
		every = append(every, byte(c))
		us = append(us, "https://b.example/"+string(rune(c)))
	}
	us = append(us, "https://b.example/all"+string(every))
	return us
}

// Every string exact() accepts comes back from the batch byte for byte, and Enqueue reports
// each input as the stored rows say.
func TestEnqueue_J1_BatchRoundTripsEveryExactString(t *testing.T) {
	db, _ := openTest(t)
	var in []NewJob
	for i, u := range oddURLs() {
		require.True(t, exact(u), "%q", u)
		host := "a.example"
		if i%3 == 0 {
			host = "h\u2028ö\\\"\x01.example" // odd hosts too
		}
		in = append(in, NewJob{URL: u, Host: host, NotBefore: time.Unix(0, int64(i)*7919+1)})
	}
	_, ok := enqueueBatch(in)
	require.True(t, ok)
	checkEnqueue(t, db, in)
	assert.NotContains(t, db.prepared, qEnqueueEach, "the batch path was taken")
}

// not_before of every kind comes back as given: zero, negative, extreme.
func TestEnqueue_J1_BatchNotBefore(t *testing.T) {
	nbs := []time.Time{{}, time.Unix(0, 0), time.Unix(0, 1), time.Unix(0, -1), time.Unix(-1, 0),
		time.Unix(0, math.MaxInt64), time.Unix(0, math.MinInt64), time.Unix(0, math.MinInt64+1),
		time.Unix(1_700_000_000, 999_999_999), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}
	var in []NewJob
	for i, nb := range nbs {
		in = append(in, NewJob{URL: "https://a.example/" + string(rune('a'+i)), Host: "a.example", NotBefore: nb})
	}
	fast, _ := openTest(t)
	slow, _ := openTest(t)
	checkEnqueue(t, fast, in)
	checkEnqueue(t, slow, append(slices.Clone(in), NewJob{URL: "https://a.example/\xff", Host: "a.example"}))
	for _, nj := range in {
		a, err := fast.JobByURL(bg, nj.URL)
		require.NoError(t, err)
		b, err := slow.JobByURL(bg, nj.URL)
		require.NoError(t, err)
		assert.Equal(t, b.NotBefore.UnixNano(), a.NotBefore.UnixNano(), "%v", nj.NotBefore)
		assert.Equal(t, b.NotBefore.IsZero(), a.NotBefore.IsZero())
	}
}

// Duplicates within one paste and across pastes, every state, both sub-paths (all new, some
// duplicate), and the one-statement-a-job path alike.
func TestEnqueue_J1_BatchDuplicates(t *testing.T) {
	for _, force := range []bool{false, true} {
		db, _ := openTest(t)
		extra := func(in []NewJob, k string) []NewJob {
			if force {
				return append(slices.Clone(in), NewJob{URL: "https://z.example/\xff" + k, Host: "z.example"})
			}
			return in
		}
		for _, s := range States {
			jobIn(t, db, "https://a.example/old-"+string(s), s)
		}
		checkEnqueue(t, db, extra([]NewJob{{URL: "https://a.example/n1", Host: "a.example"},
			{URL: "https://b.example/n2", Host: "b.example"}}, "1"))
		var in []NewJob
		for i := range 50 {
			in = append(in, NewJob{URL: "https://c.example/" + string(rune('A'+i%17)), Host: "c.example"})
			if i%7 == 0 {
				in = append(in, NewJob{URL: "https://a.example/old-" + string(States[i%len(States)]), Host: "a.example"})
			}
			if i%11 == 0 {
				in = append(in, NewJob{URL: "https://a.example/n1", Host: "a.example"})
			}
		}
		checkEnqueue(t, db, extra(in, "2"))
		checkEnqueue(t, db, extra(in, "2"))
	}
}

// A database whose largest id is at or near the largest rowid: SQLite gives the next rows
// random ids, smaller than the largest before. Each new job is still reported queued, with its
// own id, as the one-statement-a-job path reports it.
func TestEnqueue_J1_BatchNearLargestRowid(t *testing.T) {
	for _, top := range []int64{math.MaxInt64 - 1, math.MaxInt64} {
		for _, force := range []bool{false, true} {
			t.Logf("largest id %d, one job a statement %v", top, force)
			db, _ := openTest(t)
			require.NoError(t, db.write(bg, "top", func(w *wtx) error {
				_, err := w.exec(`INSERT INTO jobs (id, url, host, state, created_at, updated_at)
					VALUES (?, 'https://top.example/', 'top.example', 'done', 1, 1)`, top)
				return err
			}))
			in := []NewJob{{URL: "https://a.example/1", Host: "a.example"},
				{URL: "https://a.example/2", Host: "a.example"}, {URL: "https://a.example/3", Host: "a.example"}}
			if force {
				in = append(in, NewJob{URL: "https://a.example/\xff", Host: "a.example"})
			}
			checkEnqueue(t, db, in)
		}
	}
}

// Several Enqueues committed together (group commit) each report their own ids.
func TestEnqueue_J1_BatchGroupCommit(t *testing.T) {
	db, _ := openTest(t)
	const n = 8
	type out struct {
		in  []NewJob
		res EnqueueResult
		err error
	}
	ch := make(chan out, n)
	for k := range n {
		go func() {
			var in []NewJob
			for i := range 200 {
				u := "https://s.example/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				if i%2 == 0 {
					u = "https://o.example/" + string(rune('a'+k)) + "/" + string(rune('a'+i%26)) + string(rune('a'+i/26))
				}
				in = append(in, NewJob{URL: u, Host: "x.example"})
			}
			res, err := db.Enqueue(bg, in)
			ch <- out{in, res, err}
		}()
	}
	queued := map[string]int{}
	for range n {
		o := <-ch
		require.NoError(t, o.err)
		for i, it := range o.res.Items {
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
}

// Random valid UTF-8 of every code point and every ASCII byte but NUL round-trips exactly.
func TestEnqueue_J1_BatchRoundTripsRandomStrings(t *testing.T) {
	db, _ := openTest(t)
	rnd := rand.New(rand.NewPCG(7, 9))
	seen := map[string]bool{}
	var in []NewJob
	for len(in) < 20_000 {
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
			require.True(t, exact(s))
			in = append(in, NewJob{URL: s, Host: "h" + s[:min(len(s), 5)], NotBefore: time.Unix(0, rnd.Int64()-rnd.Int64())})
		}
	}
	for i := range in {
		if !utf8.ValidString(in[i].Host) {
			in[i].Host = "h"
		}
	}
	checkEnqueue(t, db, in)
	assert.NotContains(t, db.prepared, qEnqueueEach, "the batch path was taken")
}

// A paste whose URLs SQLite takes one by one is queued however long the paste: the batch, all its
// URLs in one string, can pass SQLite's limit on a string's length (SQLITE_LIMIT_LENGTH, 10^9
// bytes by default: 65,536 URLs, engine.Add's largest part, of 15 KB each) where no URL does.
// The limit is lowered here so that a small paste shows it.
func TestEnqueue_J1_BatchLongerThanSQLiteStringLimit(t *testing.T) {
	db, _ := openTest(t)
	const limit = 16 << 10
	require.NoError(t, db.write(bg, "limit", func(w *wtx) error {
		return w.db.wc.Raw(func(dc any) error {
			dc.(*sqlite3.SQLiteConn).SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
			return nil
		})
	}))
	var in []NewJob
	for i := range 100 {
		in = append(in, NewJob{URL: fmt.Sprintf("https://a.example/%d/%s", i, strings.Repeat("x", 300)), Host: "a.example"})
	}
	s, ok := enqueueBatch(in)
	require.True(t, ok)
	require.Greater(t, len(s), limit, "the batch is over the limit, each URL well under it")
	checkEnqueue(t, db, in)
}

// exact refuses a NUL wherever it is, also after a character that is not ASCII; a URL holding
// one is stored byte for byte either way.
func TestEnqueue_J1_ExactRefusesNULAfterNonASCII(t *testing.T) {
	for _, s := range []string{"nul\x00", "é\x00", "https://a.example/é\x00x", "✓\x00✓"} {
		assert.False(t, exact(s), "%q", s)
	}
	db, _ := openTest(t)
	checkEnqueue(t, db, []NewJob{{URL: "https://a.example/é\x00x", Host: "a.example"},
		{URL: "https://a.example/é", Host: "a.example"}, {URL: "https://a.example/ü\x00", Host: "a.example"}})
}
