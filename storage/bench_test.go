package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"heed/engine"
)

// BenchmarkEnqueue enqueues 100,000 new URLs per op in one call (J1: a paste of 100,000 lines in
// about a second). Goal: ≥ 100,000 urls/s.
func BenchmarkEnqueue(b *testing.B) {
	const n = 100_000
	db, _ := openTest(b)
	var total int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		jobs := make([]engine.NewJob, n)
		for k := range jobs {
			host := fmt.Sprintf("h%d.example", k%1000)
			u := fmt.Sprintf("https://%s/batch%d/file%d.bin", host, i, k)
			jobs[k] = engine.NewJob{URL: u, Key: u, Host: host}
		}
		b.StartTimer()
		res, err := db.Enqueue(bg, jobs, noAgain)
		require.NoError(b, err)
		require.Len(b, res, n)
		require.False(b, res[n-1].Duplicate)
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "urls/s")
}

// BenchmarkEnqueueDuplicates sends the same 100,000 URLs again: every one is a duplicate.
func BenchmarkEnqueueDuplicates(b *testing.B) {
	const n = 100_000
	db, _ := openTest(b)
	jobs := make([]engine.NewJob, n)
	for k := range jobs {
		host := fmt.Sprintf("h%d.example", k%1000)
		u := fmt.Sprintf("https://%s/file%d.bin", host, k)
		jobs[k] = engine.NewJob{URL: u, Key: u, Host: host}
	}
	_, err := db.Enqueue(bg, jobs, noAgain)
	require.NoError(b, err)
	var total int
	for b.Loop() {
		res, err := db.Enqueue(bg, jobs, noAgain)
		require.NoError(b, err)
		require.True(b, res[n-1].Duplicate)
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "urls/s")
}

// BenchmarkRecordAttempts records 10,000 attempts per op through the group-committing writer and
// flushes (S5). Goal: ≥ 50,000 rows/s.
func BenchmarkRecordAttempts(b *testing.B) {
	const n = 10_000
	db, _ := openTest(b)
	ids := enqueueURLs(b, db, "a.example", "https://a.example/1", "https://a.example/2")
	started := time.Now()
	var total int
	for b.Loop() {
		for k := range n {
			err := db.RecordAttempt(engine.Attempt{JobID: ids[k%2], URL: "https://a.example/1", Host: "a.example", Attempt: k,
				StartedAt: started, Duration: time.Millisecond, Status: 200, Outcome: "ok", Bytes: 1 << 20})
			require.NoError(b, err)
		}
		require.NoError(b, db.Flush(bg))
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkTransitions measures one committed job transition (Start then Finish back to queued)
// from many goroutines at once: concurrent transitions share commits.
func BenchmarkTransitions(b *testing.B) {
	db, _ := openTest(b)
	urls := make([]string, 1024)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://a.example/%d", i)
	}
	ids := enqueueURLs(b, db, "a.example", urls...)
	next := make(chan int64, len(ids))
	for _, id := range ids {
		next <- id
	}
	b.SetParallelism(4) // ×GOMAXPROCS goroutines
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := <-next
			_, err := db.Start(bg, id, "")
			if err == nil {
				err = finish(db, bg, engine.End{JobID: id, State: engine.JobQueued, GiveBack: true})
			}
			next <- id
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "transitions/s")
}

// BenchmarkOpenLarge measures a database of 1,000,000 jobs over 100,000 hosts (70% queued,
// 20% done, 10% failed, 1,000 left active by a "crash"): Open with recovery plus the first
// refill of a host's queue, a refill of any host, listing hosts with their counts, and the totals.
func BenchmarkOpenLarge(b *testing.B) {
	const jobs, hosts, active = 1_000_000, 100_000, 1_000
	path := filepath.Join(b.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(b, err)
	require.NoError(b, db.Close())

	built := time.Now()
	raw := rawOpen(b, path)
	_, err = raw.Exec(`PRAGMA cache_size = -262144`) // 256 MiB while building
	require.NoError(b, err)
	tx, err := raw.Begin()
	require.NoError(b, err)
	ins, err := tx.Prepare(`INSERT INTO jobs (url, key, host, state, not_before, created_at, updated_at, part, bytes)
		VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)`)
	require.NoError(b, err)
	rnd := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UnixNano()
	for i := range jobs {
		h := rnd.IntN(hosts)
		state := "queued"
		switch r := rnd.IntN(10); {
		case r < 2:
			state = "done"
		case r < 3:
			state = "failed"
		}
		nb := now + rnd.Int64N(int64(time.Hour))
		part := fmt.Sprintf("%d.part", i)
		if state == "done" {
			part = ""
		}
		_, err := ins.Exec(fmt.Sprintf("https://h%d.example/file/%d", h, i), fmt.Sprintf("h%d.example", h),
			state, nb, now, part, 1000)
		require.NoError(b, err)
	}
	require.NoError(b, ins.Close())
	require.NoError(b, tx.Commit())
	require.NoError(b, raw.Close())
	b.Logf("fixture of %d jobs over %d hosts built in %v", jobs, hosts, time.Since(built).Round(time.Millisecond))

	crash := func() {
		raw := rawOpen(b, path)
		_, err := raw.Exec(`UPDATE jobs SET state = 'active' WHERE id IN
			(SELECT id FROM jobs WHERE state = 'queued' ORDER BY random() LIMIT ?)`, active)
		require.NoError(b, err)
		require.NoError(b, raw.Close())
	}

	b.Run("open+recover+refill", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			crash()
			b.StartTimer()
			db, err := Open(path)
			require.NoError(b, err)
			next, err := db.NextJobs(bg, "h0.example", engine.Cursor{}, 64)
			require.NoError(b, err)
			b.StopTimer()
			require.Equal(b, int64(active), db.Recovered())
			require.NotEmpty(b, next)
			require.NoError(b, db.Close())
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
	})

	db, err = Open(path)
	require.NoError(b, err)
	defer db.Close()
	b.Run("NextJobs", func(b *testing.B) {
		i := 0
		for b.Loop() {
			_, err := db.NextJobs(bg, fmt.Sprintf("h%d.example", i%hosts), engine.Cursor{}, 64)
			require.NoError(b, err)
			i++
		}
	})
	b.Run("Hosts", func(b *testing.B) {
		for b.Loop() {
			hs, err := db.Hosts(bg)
			require.NoError(b, err)
			if len(hs) < hosts*9/10 {
				b.Fatalf("%d hosts listed", len(hs))
			}
		}
	})
	b.Run("Counts", func(b *testing.B) {
		for b.Loop() {
			_, err := db.Counts(bg)
			require.NoError(b, err)
		}
	})
}
