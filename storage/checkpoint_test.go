package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// S5: the writer's commits do not copy the WAL back into the database; a connection of its own
// does, in the background, soon after the commits. SQLite's own checkpoint stays on the writer
// only as a backstop at walBackstopPages.
func TestCheckpoint_S5_BackgroundCopiesTheWAL(t *testing.T) {
	db, _ := openTest(t)
	var auto int
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA wal_autocheckpoint").Scan(&auto))
	assert.Equal(t, walBackstopPages, auto, "the writer checkpoints only as a backstop")

	// About 2,500 pages of jobs and their indexes, in 20 commits.
	for b := range 20 {
		urls := make([]string, 1000)
		for i := range urls {
			urls[i] = fmt.Sprintf("https://h%d.example/some/longer/path/to/file-%05d-%05d.bin", i%50, b, i)
		}
		enqueueURLs(t, db, "h.example", urls...)
	}
	deadline := time.Now().Add(30 * time.Second) // a liveness bound, not a timing claim
	for db.checkpointed.Load() < walCheckpointPages && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, db.checkpointed.Load(), int64(walCheckpointPages),
		"the background checkpointer copied the committed pages")

}

// Close does not wait out the checkpointer's pause.
func TestCheckpoint_S5_CloseDoesNotWaitForThePause(t *testing.T) {
	db, _ := openTest(t, withCheckpointPause(time.Hour, time.Hour))
	enqueueURLs(t, db, "a.example", "https://a.example/1") // wakes the checkpointer: it pauses for an hour
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a liveness bound, not a timing claim
		t.Fatal("Close waited for the checkpointer's pause")
	}
}
