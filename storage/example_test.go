package storage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"heed/storage"
)

// A job's life: queued by a paste, started, retried after a throttle, finished; its attempts go
// to history through the group-committing writer.
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

	res, err := db.Enqueue(ctx, []storage.NewJob{
		{URL: "https://example.com/a.iso", Host: "example.com"},
		{URL: "https://example.com/a.iso", Host: "example.com"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued", res.Queued, "duplicates", res.Duplicates)
	id := res.Items[0].ID

	attempt, _ := db.MarkActive(ctx, id) // on disk before the download starts
	_ = db.RecordAttempt(storage.Attempt{JobID: id, URL: "https://example.com/a.iso", Host: "example.com",
		Attempt: attempt, StartedAt: time.Now(), Status: 429, Outcome: "throttled", RetryAfter: time.Minute})
	_ = db.MarkQueued(ctx, id, storage.Retry{NotBefore: time.Now().Add(time.Minute), Err: "429 Too Many Requests", Status: 429, Throttled: true})

	attempt, _ = db.MarkActive(ctx, id)
	_ = db.RecordAttempt(storage.Attempt{JobID: id, URL: "https://example.com/a.iso", Host: "example.com",
		Attempt: attempt, StartedAt: time.Now(), Status: 200, Outcome: "ok", Bytes: 3})
	_ = db.MarkDone(ctx, id, storage.Done{File: "a.iso", Bytes: 3, SHA256: "…", Status: 200})

	if err := db.Flush(ctx); err != nil { // history is committed
		log.Fatal(err)
	}
	j, _ := db.Job(ctx, id)
	hist, _ := db.HistoryPage(ctx, storage.HistoryFilter{Host: "example.com"})
	fmt.Println(j.State, j.File, "attempts", j.Attempts, "throttled", j.Throttled, "history", len(hist))
	// Output:
	// queued 1 duplicates 1
	// done a.iso attempts 1 throttled 1 history 2
}
