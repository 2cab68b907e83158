package engine

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// S5: while requests are in flight, the completer waits finishLinger for other
// downloads to finish with the first, so that one commit records them all;
// with nothing in flight it does not wait; it never takes more than the
// batch holds. Time is the bubble's, so the test is exact.
func TestGather_S5_FinishesTogetherWhatEndsWithinTheLinger(t *testing.T) {
	job := func(id int64) *finishing { return &finishing{job: JobRecord{ID: id}} }
	ids := func(b []*finishing) []int64 {
		var out []int64
		for _, f := range b {
			out = append(out, f.job.ID)
		}
		return out
	}
	busy := func() bool { return true }

	t.Run("waits for the linger while requests are in flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fin := make(chan *finishing, 8)
			go func() {
				time.Sleep(5 * time.Millisecond)
				fin <- job(2)
				time.Sleep(15 * time.Millisecond)
				fin <- job(3)                     // 20 ms after the first: in
				time.Sleep(10 * time.Millisecond) // 30 ms: after the linger
				fin <- job(4)
			}()
			start := time.Now()
			got := gather(append(make([]*finishing, 0, 8), job(1)), fin, 25*time.Millisecond, busy)
			assert.Equal(t, []int64{1, 2, 3}, ids(got))
			assert.Equal(t, 25*time.Millisecond, time.Since(start))
			time.Sleep(10 * time.Millisecond)
			assert.Equal(t, []int64{4}, ids(gather(make([]*finishing, 0, 8), fin, 0, busy)), "the next batch")
		})
	})
	t.Run("does not wait with nothing in flight", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fin := make(chan *finishing, 8)
			fin <- job(2)
			start := time.Now()
			got := gather(append(make([]*finishing, 0, 8), job(1)), fin, 25*time.Millisecond, func() bool { return false })
			assert.Equal(t, []int64{1, 2}, ids(got), "what was already waiting")
			assert.Zero(t, time.Since(start))
		})
	})
	t.Run("stops waiting when the last request in flight ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fin := make(chan *finishing, 8)
			var inflight atomic.Bool
			inflight.Store(true)
			go func() {
				time.Sleep(5 * time.Millisecond)
				inflight.Store(false)
				fin <- job(2)
			}()
			start := time.Now()
			got := gather(append(make([]*finishing, 0, 8), job(1)), fin, 25*time.Millisecond, inflight.Load)
			assert.Equal(t, []int64{1, 2}, ids(got))
			assert.Equal(t, 5*time.Millisecond, time.Since(start))
		})
	})
	t.Run("a full batch goes at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fin := make(chan *finishing, 8)
			fin <- job(2)
			fin <- job(3)
			start := time.Now()
			got := gather(append(make([]*finishing, 0, 2), job(1)), fin, 25*time.Millisecond, busy)
			assert.Equal(t, []int64{1, 2}, ids(got))
			assert.Zero(t, time.Since(start))
		})
	})
	t.Run("a closed channel ends the wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fin := make(chan *finishing, 8)
			close(fin)
			got := gather(append(make([]*finishing, 0, 8), job(1)), fin, 25*time.Millisecond, busy)
			assert.Equal(t, []int64{1}, ids(got))
		})
	})
}

// S5: the completer may hold maxFinishing downloads beside those in flight,
// fewer where the open-file limit is low (each holds its part open, each
// request a connection and its part), never so many that they, the
// requests and a reserve exceed the limit, and never fewer than a handful.
func TestFinishingFor_S5_BoundedByOpenFiles(t *testing.T) {
	assert.Equal(t, maxFinishing, finishingFor(0, 16), "limit unknown")
	assert.Equal(t, maxFinishing, finishingFor(1<<20, 16))
	assert.Equal(t, maxFinishing, finishingFor(256+2*16+2*maxFinishing, 16))
	assert.Equal(t, 368, finishingFor(1024, 16), "the usual soft limit")
	assert.Equal(t, minFinishing, finishingFor(384, 16))
	assert.Equal(t, minFinishing, finishingFor(100, 16))
	assert.Equal(t, minFinishing, finishingFor(2304, 1024), "as many workers as the limit allows")
	for _, c := range []struct {
		limit    uint64
		inflight int
	}{{500, 16}, {1024, 16}, {2000, 100}, {2303, 16}, {8192, 2048}, {65536, 4096}} {
		got := finishingFor(c.limit, c.inflight)
		assert.LessOrEqual(t, 256+2*c.inflight+got, int(c.limit), "%+v", c)
	}
}
