package storage

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"heed/engine"
)

// BenchmarkJobLifecycle is the database's share of one small download as the engine drives it
// with politeness off: 20,000 jobs over 50 hosts, started with their parts recorded, their
// progress noted in the background, and finished with their last history row, from 8 downloads
// in flight at once so that their commits are shared. ns/op is per job, every write committed.
func BenchmarkJobLifecycle(b *testing.B) {
	const hosts, perHost, inFlight = 50, 400, 8
	for b.Loop() {
		b.StopTimer()
		db, _ := openTest(b)
		byHost := make([][]int64, hosts)
		for h := range hosts {
			urls := make([]string, perHost)
			for i := range urls {
				urls[i] = fmt.Sprintf("http://127.0.0.%d:40000/files/fast%d-%05d.bin", h+2, h, i)
			}
			byHost[h] = enqueueURLs(b, db, fmt.Sprintf("127.0.0.%d:40000", h+2), urls...)
		}
		order := make(chan int64, hosts*perHost) // round robin over the hosts, as the core dispatches
		for i := range perHost {
			for h := range hosts {
				order <- byHost[h][i]
			}
		}
		close(order)
		b.StartTimer()
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				for id := range order {
					part := fmt.Sprintf("%d.bin.part", id)
					j, err := db.Start(bg, id, part)
					if err != nil {
						b.Error(err)
						return
					}
					if err := db.Note(id, engine.Resume{Part: part, Size: 1024}); err != nil {
						b.Error(err)
						return
					}
					err = finish(db, bg, engine.End{JobID: id, State: engine.JobDone, File: part[:len(part)-5],
						SHA256: "4f3c0d8a6f9d2e1b4f3c0d8a6f9d2e1b4f3c0d8a6f9d2e1b4f3c0d8a6f9d2e1b", Status: 200,
						Resume: engine.Resume{Part: part, Bytes: 1024, Size: 1024},
						Attempt: &engine.Attempt{JobID: id, URL: j.URL, Host: j.Host, Attempt: 1, StartedAt: time.Now(),
							Duration: time.Millisecond, Status: 200, Outcome: "ok", Bytes: 1024}})
					if err == nil {
						err = db.Named(id)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := db.Flush(bg); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*hosts*perHost), "µs/job")
}
