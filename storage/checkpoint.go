package storage

import (
	"context"
	"database/sql"
	"time"
)

// Checkpoints (copying the -wal file's pages back into the database file) run on a connection
// of their own, in the background, not inside whichever commit crosses SQLite's threshold. A
// checkpoint reads and writes thousands of pages and syncs both files; when the writer did it,
// every job start and finish queued behind that commit waited for the disk (at 20,000 small
// downloads, one commit in 25 ran a checkpoint). A passive checkpoint never blocks the writer.
//
// The checkpointer runs after commits: every checkpointMin while each run finds at least
// walCheckpointPages new pages to copy (a busy queue), backing off to checkpointMax while they are
// few (a few jobs a second: one checkpoint every two seconds, not one a commit). The writer keeps
// SQLite's own checkpoint as a backstop at walBackstopPages, for when these cannot keep up.
const (
	walCheckpointPages = 1000 // SQLite's own default threshold
	checkpointMin      = 50 * time.Millisecond
	checkpointMax      = 2 * time.Second
	walBackstopPages   = 16384 // 64 MiB of 4 KiB pages
)

// checkpointer copies the WAL back into the database after commits (db.kick), until
// db.ckptStop is closed; then it closes its connection and db.ckptDone. What is left is
// checkpointed by the writer's connection, the last to close.
func (db *DB) checkpointer(c *sql.DB, pauseMin, pauseMax time.Duration) {
	defer close(db.ckptDone)
	defer c.Close()
	wait := pauseMin
	var copiedBefore int64
	pause := time.NewTimer(time.Hour)
	defer pause.Stop()
	for {
		select {
		case <-db.kick:
		case <-db.ckptStop:
			return
		}
		pause.Reset(wait) // let the commits of a busy moment gather
		select {
		case <-pause.C:
		case <-db.ckptStop:
			return
		}
		select {
		case <-db.kick: // this run covers it
		default:
		}
		var busy, frames, copied int64
		err := c.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		if err != nil { // the writer's backstop still checkpoints; try again less often
			db.log.Warn("storage: background checkpoint failed", "db", db.path, "err", err)
			wait = min(2*wait, pauseMax)
			continue
		}
		n := copied - copiedBefore
		if copied < copiedBefore { // the writer started the WAL over
			n = copied
		}
		copiedBefore = copied
		db.checkpointed.Add(max(n, 0))
		if n >= walCheckpointPages {
			wait = pauseMin
		} else {
			wait = min(2*wait, pauseMax)
		}
	}
}
