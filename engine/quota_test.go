package engine

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine/quota"
)

// said is the quota a response with these header lines states.
func said(t *testing.T, lines ...string) *quota.Statement {
	t.Helper()
	h := http.Header{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, ": ")
		h.Add(k, v)
	}
	s, ok := quota.Parse(h, t0)
	require.True(t, ok, "%v states a quota", lines)
	return &s
}

// answer reports d answered 200 at h.now with statement s.
func (h *harness) answer(d Dispatch, s *quota.Statement, retryAfter string) {
	h.c.Observe(d, Outcome{Status: 200, RetryAfter: retryAfter, Attempts: 1, Quota: s}, h.now)
}

// gaps dispatches n jobs of host a in turn, each at the first instant it
// may go and answered with no statement, and returns the times between them.
func (h *harness) gaps(n int) []time.Duration {
	h.t.Helper()
	starts := h.serveInTurn(n)
	var out []time.Duration
	for i := 1; i < len(starts); i++ {
		out = append(out, starts[i].Sub(starts[i-1]))
	}
	return out
}

func TestGovernor_G12_NothingLeftWaitsForTheReset(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 3)
	h.answer(h.mustNext(), said(t, `RateLimit-Policy: "p";q=100;w=60`, `RateLimit: "p";r=0;t=20`), "")
	wake := h.none()
	assert.GreaterOrEqual(t, wake.Sub(h.now), 20*time.Second, "not before the reset")
	assert.LessOrEqual(t, wake.Sub(h.now), 21*time.Second, "a small positive jitter")
	s := h.snap("a")
	assert.Contains(t, s.Quota, "0 left of 100 per 60s, resets in 20s")
	assert.True(t, s.QuotaShaping)
	assert.Contains(t, h.kinds("a"), EventQuota, "the timeline says the quota shapes the host")
}

func TestGovernor_G12_RequestsLeftSpreadOverTheReset(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 6)
	first := h.now
	h.answer(h.mustNext(), said(t, `RateLimit: "p";r=4;t=20`), "")
	starts := h.serveInTurn(4)
	for i, at := range starts {
		assert.InDelta(t, float64(time.Duration(i+1)*5*time.Second), float64(at.Sub(first)), float64(time.Millisecond),
			"request %d: 20 s spread over the 4 left", i+2)
	}
	assert.GreaterOrEqual(t, starts[3].Sub(first), 20*time.Second, "the last of them no earlier than the reset")
}

func TestGovernor_G12_PolicyCapsTheRate(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 5)
	h.answer(h.mustNext(), said(t, `RateLimit-Policy: "p";q=10;w=60`), "")
	for i, g := range h.gaps(4) {
		assert.InDelta(t, float64(6*time.Second), float64(g), float64(time.Millisecond), "request %d: 10 per 60 s", i+2)
	}
}

func TestGovernor_G12_NeverFasterThanTheHostsOwnRate(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst = 6, 1
	h := newHarness(t, tun)
	h.addN("a", 1, 4)
	h.answer(h.mustNext(), said(t, `RateLimit-Policy: "p";q=1000;w=1`, `RateLimit: "p";r=999;t=1`), "")
	for i, g := range h.gaps(3) {
		assert.GreaterOrEqual(t, g, 10*time.Second, "request %d: the host's own 6/min stays the ceiling", i+2)
	}
	assert.False(t, h.snap("a").QuotaShaping, "the quota slows nothing")
}

func TestGovernor_G12_MostRestrictivePolicyWins(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 4)
	h.answer(h.mustNext(), said(t, `RateLimit-Policy: "burst";q=100;w=10, "daily";q=1000;w=86400`,
		`RateLimit: "burst";r=90;t=5, "daily";r=20;t=3600`), "")
	for _, g := range h.gaps(3) {
		assert.InDelta(t, float64(180*time.Second), float64(g), float64(10*time.Second), "20 left in an hour: 3 min apart")
	}
}

func TestGovernor_G12_RetryAfterWinsOverTheReset(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 2)
	h.answer(h.mustNext(), said(t, `RateLimit: "p";r=0;t=600`), "2")
	wake := h.none()
	assert.Less(t, wake.Sub(h.now), 10*time.Second, "Retry-After 2 s, not the quota's 10 minutes")
	assert.GreaterOrEqual(t, wake.Sub(h.now), 2*time.Second)
}

func TestGovernor_G12_BytesQuotaIgnoredAndSaid(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 3)
	h.answer(h.mustNext(), said(t, `RateLimit-Policy: "b";q=1000;w=60;qu="content-bytes"`, `RateLimit: "b";r=0;t=60`), "")
	assert.Len(t, h.drain(), 2, "a quota in bytes does not hold requests")
	assert.Contains(t, h.snap("a").QuotaNote, "not paced from")
}

// G12, G10: a host's quota is kept with its state: a restart inside the
// window goes on with the requests left, not with a fresh quota.
func TestGovernor_G12_RestartKeepsTheQuota(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 2)
	h.answer(h.mustNext(), said(t, `RateLimit: "p";r=2;t=60`), "")
	h.serveInTurn(1) // one of the two left, 30 s later
	saved, ok := h.c.ExportHost("a")
	require.True(t, ok)
	assert.EqualValues(t, 1, saved.QuotaRemaining)
	assert.False(t, saved.QuotaReset.IsZero())

	h2 := newHarness(t, fast())
	h2.now = h.now.Add(time.Second)
	h2.c.RestoreHost(saved, h2.now)
	restarted := h2.now
	h2.addN("a", 10, 3)
	at := h2.serveInTurn(1)[0] // the one left before the reset
	assert.Greater(t, at.Sub(restarted), 25*time.Second, "the quota spent before the restart stays spent")
}
