package engine

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A large queue trades collector work for memory (the 1M-job RSS goal); a
// small one runs at Go's default pace.
func TestTuneGC_FollowsQueueSize(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set in the environment, which tuneGC leaves alone")
	}
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev); gcPercent.Store(0) })
	gcPercent.Store(0)

	tuneGC(bigQueue)
	assert.Equal(t, bigQueueGOGC, debug.SetGCPercent(bigQueueGOGC))
	tuneGC(10)
	assert.Equal(t, 100, debug.SetGCPercent(100))
}
