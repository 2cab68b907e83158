package storage

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkJobLifecycle is the database's share of one small download as the engine drives it
// with politeness off: 20,000 jobs over 50 hosts, started six at a time across hosts (one commit
// a dispatch round), their parts recorded in the background, and finished with their attempts
// sixty at a time (one commit a completer batch). ns/op is per job, every write committed.
func BenchmarkJobLifecycle(b *testing.B) {
	const hosts, perHost, startBatch, finishBatch = 50, 400, 6, 60
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
		order := make([]int64, 0, hosts*perHost) // round robin over the hosts, as the core dispatches
		for i := range perHost {
			for h := range hosts {
				order = append(order, byHost[h][i])
			}
		}
		b.StartTimer()
		var started []Job
		for i := 0; i < len(order); i += startBatch {
			js, err := db.StartJobs(bg, order[i:min(i+startBatch, len(order))])
			if err != nil {
				b.Fatal(err)
			}
			for _, j := range js {
				if err := db.QueueProgress(j.ID, Progress{Part: j.URL[30:] + ".part", Size: 1024}); err != nil {
					b.Fatal(err)
				}
			}
			started = append(started, js...)
			if len(started) >= finishBatch || i+startBatch >= len(order) {
				fs := make([]Finish, len(started))
				for k, j := range started {
					fs[k] = Finish{
						Attempt: Attempt{JobID: j.ID, URL: j.URL, Host: j.Host, Attempt: 1, StartedAt: time.Now(),
							Duration: time.Millisecond, Status: 200, Outcome: "ok", Bytes: 1024},
						Done: Done{File: j.URL[30:], Bytes: 1024, SHA256: "4f3c0d8a6f9d2e1b4f3c0d8a6f9d2e1b4f3c0d8a6f9d2e1b4f3c0d8a6f9d2e1b", Status: 200},
					}
				}
				if _, err := db.FinishJobs(bg, fs); err != nil {
					b.Fatal(err)
				}
				started = started[:0]
			}
		}
		if err := db.Flush(bg); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*hosts*perHost), "µs/job")
}
