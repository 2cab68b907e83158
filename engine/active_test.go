package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// U3: a retune's event says what changed.
func TestRetuned_U3_SaysWhatChanged(t *testing.T) {
	was := DefaultTunables()
	now := was
	now.RecoveryTimeout, now.Retry.MaxAttempts = time.Minute, was.Retry.MaxAttempts+4
	assert.Equal(t, fmt.Sprintf("recovery timeout %v → 1m0s, max attempts %d → %d", was.RecoveryTimeout,
		was.Retry.MaxAttempts, was.Retry.MaxAttempts+4), retuned(was, now))
	assert.Contains(t, retuned(was, was), "as before")

	var got []Event
	c := NewCore(Config{Defaults: was, OnEvent: func(e Event) { got = append(got, e) }})
	now = was
	now.RatePerMin = 6
	require.NoError(t, c.SetHostTunables("r.example", now))
	require.NotEmpty(t, got)
	assert.Equal(t, fmt.Sprintf("rate/min %g → 6", was.RatePerMin), got[len(got)-1].Detail)
}
