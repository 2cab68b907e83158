package storage

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
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

// J1: every key is stored in the jobs.key column byte for byte (storetest checks the URLs and
// hosts, and that each key finds its own job again).
func TestEnqueue_J1_KeysStoredByteForByte(t *testing.T) {
	db, _ := openTest(t)
	keys := []string{`\u0041`, `\\u0041`, `\ud83d\ude00`, `"`, "'; DROP TABLE jobs; --", "\u2028\u2029", "\ufeff",
		"\U0010FFFF", "e\u0301", "nul\x00", "é\x00x", "\xff\xfe", "\xc3", "0", "null", " ", "",
		strings.Repeat("é\\\"", 30_000)}
	for c := 1; c < 0x100; c++ {
		keys = append(keys, "b"+string([]byte{byte(c)}))
	}
	in := make([]engine.NewJob, len(keys))
	for i, k := range keys {
		in[i] = engine.NewJob{URL: fmt.Sprintf("https://a.example/%d", i), Key: k, Host: "a.example"}
	}
	res, err := db.Enqueue(bg, in, noAgain)
	require.NoError(t, err)
	require.Len(t, res, len(in))
	for i, it := range res {
		require.False(t, it.Duplicate, "key %d is new", i)
		var key []byte
		require.NoError(t, db.r.QueryRow(`SELECT key FROM jobs WHERE id = ?`, it.ID).Scan(&key))
		assert.Equal(t, []byte(keys[i]), key, "key %d", i)
	}
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
