package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// U5: a download that starts over (the server would not resume) is measured
// from its new start, so its speed never goes negative.
func TestActive_U5_SpeedFromWhereTheBodyStarts(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	a := Active{Started: t0, StartBytes: 2 << 20}
	a.bodyStarts(2<<20, t0.Add(time.Second)) // resumed where it was: nothing changes
	assert.Equal(t, Active{Started: t0, StartBytes: 2 << 20}, a)
	a.bodyStarts(0, t0.Add(2*time.Second)) // started over from zero
	assert.Equal(t, Active{Started: t0.Add(2 * time.Second), StartBytes: 0}, a)
	a.Bytes = 512 << 10
	assert.Positive(t, a.Bytes-a.StartBytes)
}
