package engine

import (
	"os"
	"runtime/debug"
	"sync/atomic"
)

// The queue is Heed's one large, long-lived heap: about 120 bytes a job.
// Up to bigQueue jobs the collector runs at Go's default pace; past it, at
// a third of the default heap growth, which keeps a million queued jobs
// under 300 MB for a little more collector work: with 50, the scale run's
// peak RSS was 277–283 MiB (close to 300 MB), with 35 251–268 MiB, its first
// request 0.05 s later (5 runs each). GOGC in the environment wins.
const (
	bigQueue     = 200_000
	bigQueueGOGC = 35
)

var gcPercent atomic.Int32 // what tuneGC set last; 0 before

// tuneGC sets the collector's pace for a queue of n jobs, when it changes.
func tuneGC(n int) {
	if os.Getenv("GOGC") != "" {
		return
	}
	want := int32(100)
	if n >= bigQueue {
		want = bigQueueGOGC
	}
	if gcPercent.Swap(want) != want {
		debug.SetGCPercent(int(want))
	}
}
