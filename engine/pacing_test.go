package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/demo"
)

// G12 over loopback: a server that enforces 10 requests per 6 s window and
// says so on every response — in the IETF RateLimit fields, or in the
// X-RateLimit ones with an epoch Reset from a clock an hour ahead — gets
// 30 requests from a Heed told it may send 6,000 a minute with a burst of
// 20, and answers none of them 429: Heed paces from what the server says,
// and takes about as long as the quota requires.
func TestEngine_G12_PacedByTheServersQuotaBeforeAny429(t *testing.T) {
	for _, tc := range []struct {
		name, form string
		ahead      time.Duration
	}{{"RateLimit fields", "", 0}, {"X-RateLimit with an epoch reset, server an hour ahead", "x", time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startDemo(t, demo.Config{Files: 30, FileSize: 512, Seed: 8, Hosts: []demo.HostSpec{
				{Name: "quota", Behavior: demo.Quota, QuotaLimit: 10, QuotaWindow: 6 * time.Second,
					QuotaForm: tc.form, ClockAhead: tc.ahead}}})
			tun := fast()
			tun.RatePerMin, tun.Burst, tun.MaxInflight = 6000, 20, 1
			r := newRig(t, engine.Options{Defaults: tun})
			r.add(srv.URLs()...)
			start := time.Now()
			r.runIdle()
			took := time.Since(start)

			throttled := 0
			for _, l := range srv.Log() {
				if l.Status == 429 {
					throttled++
				}
			}
			assert.Zero(t, throttled, "no request past the quota")
			for _, j := range r.jobs() {
				assert.Equal(t, engine.JobDone, j.State, j.URL)
			}
			// 30 requests at 10 per 6 s: the third window begins 12 s after the
			// first request. Not a timing claim beyond "paced, and not stalled".
			assert.GreaterOrEqual(t, took, 11*time.Second, "paced to the quota")
			assert.Less(t, took, 30*time.Second, "no longer than the quota requires, and a margin")
			hosts, err := r.db.Hosts(context.Background())
			require.NoError(t, err)
			require.Len(t, hosts, 1)
			assert.NotZero(t, hosts[0].QuotaSeen, "the quota is kept with the host's state")
		})
	}
}
