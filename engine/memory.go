package engine

import (
	"os"
	"runtime/debug"
	"sync/atomic"
)

// The queue is Heed's one large, long-lived heap: about 120 bytes a job.
// Up to bigQueue jobs the collector runs at Go's default pace; past it, at
// half the default heap growth, which keeps a million queued jobs well under
// 300 MB for a little more collector work. GOGC in the environment wins.
const (
	bigQueue     = 200_000
	bigQueueGOGC = 50
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
