package storage

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkEnqueue enqueues 100,000 new URLs per op in one call (J1: a paste of 100,000 lines in
// about a second). Goal: ≥ 100,000 urls/s.
func BenchmarkEnqueue(b *testing.B) {
	const n = 100_000
	db, _ := openTest(b)
	var total int
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		jobs := make([]NewJob, n)
		for k := range jobs {
			host := fmt.Sprintf("h%d.example", k%1000)
			jobs[k] = NewJob{URL: fmt.Sprintf("https://%s/batch%d/file%d.bin", host, i, k), Host: host}
		}
		b.StartTimer()
		res, err := db.Enqueue(bg, jobs)
		require.NoError(b, err)
		require.Equal(b, n, res.Queued)
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "urls/s")
}

// BenchmarkEnqueueDuplicates sends the same 100,000 URLs again: every one is a duplicate.
func BenchmarkEnqueueDuplicates(b *testing.B) {
	const n = 100_000
	db, _ := openTest(b)
	jobs := make([]NewJob, n)
	for k := range jobs {
		host := fmt.Sprintf("h%d.example", k%1000)
		jobs[k] = NewJob{URL: fmt.Sprintf("https://%s/file%d.bin", host, k), Host: host}
	}
	_, err := db.Enqueue(bg, jobs)
	require.NoError(b, err)
	var total int
	for b.Loop() {
		res, err := db.Enqueue(bg, jobs)
		require.NoError(b, err)
		require.Equal(b, n, res.Duplicates)
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
			err := db.RecordAttempt(Attempt{JobID: ids[k%2], URL: "https://a.example/1", Host: "a.example", Attempt: k,
				StartedAt: started, Duration: time.Millisecond, Status: 200, Outcome: "ok", Bytes: 1 << 20, BreakerState: "closed"})
			require.NoError(b, err)
		}
		require.NoError(b, db.Flush(bg))
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkTransitions measures one committed job transition (MarkActive then MarkQueued) from
// 8 goroutines at once: concurrent transitions share commits.
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
			_, err := db.MarkActive(bg, id)
			if err == nil {
				err = db.MarkQueued(bg, id, Retry{})
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
// next-due query, loading every queued job, and the counts the window shows.
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
	ins, err := tx.Prepare(`INSERT INTO jobs (url, host, state, not_before, created_at, updated_at, part, bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
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
		_, err := ins.Exec(fmt.Sprintf("https://h%d.example/file/%d", h, i), fmt.Sprintf("h%d.example", h),
			state, nb, now, now, fmt.Sprintf("%d.part", i), 1000)
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

	b.Run("open+recover+due", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			crash()
			b.StartTimer()
			db, err := Open(path)
			require.NoError(b, err)
			due, err := db.HostDueJobs(bg, "h0.example", 10)
			require.NoError(b, err)
			b.StopTimer()
			require.Equal(b, int64(active), db.Recovered())
			require.NotEmpty(b, due)
			require.NoError(b, db.Close())
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
	})

	db, err = Open(path)
	require.NoError(b, err)
	defer db.Close()
	b.Run("ForEachQueued", func(b *testing.B) {
		var rows int
		for b.Loop() {
			rows = 0
			require.NoError(b, db.ForEachQueued(bg, func(int64, string, time.Time) error { rows++; return nil }))
		}
		b.ReportMetric(float64(rows), "jobs")
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "jobs/s")
	})
	b.Run("HostDueJobs", func(b *testing.B) {
		i := 0
		for b.Loop() {
			_, err := db.HostDueJobs(bg, fmt.Sprintf("h%d.example", i%hosts), 10)
			require.NoError(b, err)
			i++
		}
	})
	b.Run("CountsByState", func(b *testing.B) {
		for b.Loop() {
			_, err := db.CountsByState(bg)
			require.NoError(b, err)
		}
	})
	b.Run("CountsByHost", func(b *testing.B) {
		for b.Loop() {
			m, err := db.CountsByHost(bg)
			require.NoError(b, err)
			require.NotEmpty(b, m)
		}
	})
}
