package storage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"heed/engine"
	"heed/storage"
)

// A job's life: queued by a paste, started with its part recorded, retried after a throttle,
// finished; its attempts go to history with the transitions that end them.
func Example() {
	dir, err := os.MkdirTemp("", "heed-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := storage.Open(filepath.Join(dir, "heed.db"))
	if err != nil {
		log.Fatal(err) // an *storage.OpenError naming the file: exit 3
	}
	defer db.Close()

	const url = "https://example.com/a.iso"
	res, err := db.Enqueue(ctx, []engine.NewJob{
		{URL: url, Key: url, Host: "example.com"},
		{URL: url, Key: url, Host: "example.com"},
	}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("duplicate", res[0].Duplicate, res[1].Duplicate)
	id := res[0].ID

	job, _ := db.Start(ctx, id, "a.iso.part") // on disk before the request and the file
	_, _ = db.Finish(ctx, engine.End{JobID: id, State: engine.JobQueued, NotBefore: time.Now().Add(time.Minute),
		GiveBack: true, Throttled: true, Error: "429 Too Many Requests", Status: 429,
		Attempt: &engine.Attempt{JobID: id, URL: url, Host: "example.com", Attempt: job.Attempts,
			StartedAt: time.Now(), Status: 429, Outcome: "throttled", RetryAfter: time.Minute},
		Resume: engine.Resume{Part: "a.iso.part", Size: -1}})

	job, _ = db.Start(ctx, id, "a.iso.part")
	_, _ = db.Finish(ctx, engine.End{JobID: id, State: engine.JobDone, File: "a.iso", SHA256: "…", Status: 200,
		Attempt: &engine.Attempt{JobID: id, URL: url, Host: "example.com", Attempt: job.Attempts, Throttled: 1,
			StartedAt: time.Now(), Status: 200, Outcome: "ok", Bytes: 3},
		Resume: engine.Resume{Part: "a.iso.part", Bytes: 3, Size: 3}})
	// … the part takes its final name, then:
	_ = db.Named(id)

	if err := db.Flush(ctx); err != nil { // the background writes are committed
		log.Fatal(err)
	}
	j, _ := db.Job(ctx, id)
	hist, _ := db.History(ctx, engine.HistoryQuery{Host: "example.com"})
	counts, _ := db.Counts(ctx)
	fmt.Println(j.State, j.File, "attempts", j.Attempts, "throttled", j.Throttled, "history", len(hist), "done", counts.Done)
	// Output:
	// duplicate false true
	// done a.iso attempts 1 throttled 1 history 2 done 1
}
