package bench

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCPUTimes(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got := parseCPUTimes("cpu  100 5 50 800 20 3 2 1 7 0")
	assert.Equal(t, cpuTimes{total: 981, idle: 820}, got, "guest time is in user already")
	assert.Equal(t, cpuTimes{}, parseCPUTimes("cpu0 1 2 3 4 5 6 7 8"), "one CPU's line, not the machine's")
	assert.Equal(t, cpuTimes{}, parseCPUTimes("cpu 1 2 x 4 5"))
	assert.Equal(t, cpuTimes{}, parseCPUTimes(""))
}

func TestIdleSince(t *testing.T) {
	before := cpuTimes{total: 1000, idle: 400}
	assert.InDelta(t, 0.25, cpuTimes{total: 1200, idle: 450}.idleSince(before), 1e-9)
	assert.Equal(t, -1.0, cpuTimes{total: 1000, idle: 400}.idleSince(before), "no tick passed")
	assert.Equal(t, -1.0, cpuTimes{total: 1200, idle: 450}.idleSince(cpuTimes{}), "unknown at start")
	assert.Equal(t, -1.0, cpuTimes{}.idleSince(before), "unknown at exit")
}

// A run is measured with the machine's idle share while it ran.
func TestRun_MeasuresMachineIdle(t *testing.T) {
	m, err := RunChild(exec.Command("sleep", "0.2"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, m.Idle, 0.0)
	assert.LessOrEqual(t, m.Idle, 1.0)
}
