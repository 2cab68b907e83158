package engine

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// F5/S2: a part is recorded as its body starts, except a small body from
// the start, which is recorded only if it is still arriving after
// partRecordDelay; nothing is recorded once the attempt ends (its job's
// next state is committed after the records). Time is the bubble's.
func TestPartNotes_F5_SmallBodiesRecordedOnlyIfStillArriving(t *testing.T) {
	small := Resume{Part: "a.bin.part", Size: 1 << 10}
	large := Resume{Part: "big.iso.part", Size: 1 << 30}
	resumed := Resume{Part: "a.bin.part", Bytes: 512, Size: 1 << 10}
	unknown := Resume{Part: "x.part", Size: -1}
	rec := func() (*partNotes, func() []Resume) {
		var mu sync.Mutex
		var got []Resume
		p := &partNotes{note: func(r Resume) { mu.Lock(); got = append(got, r); mu.Unlock() }}
		return p, func() []Resume { mu.Lock(); defer mu.Unlock(); return append([]Resume(nil), got...) }
	}

	t.Run("a small body that ends within the delay is not recorded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, got := rec()
			p.started(small)
			time.Sleep(partRecordDelay - time.Millisecond)
			p.end()
			time.Sleep(time.Hour)
			assert.Empty(t, got())
		})
	})
	t.Run("a small body still arriving after the delay is recorded once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, got := rec()
			p.started(small)
			time.Sleep(partRecordDelay - time.Millisecond)
			assert.Empty(t, got())
			time.Sleep(time.Millisecond)
			synctest.Wait()
			assert.Equal(t, []Resume{small}, got())
			p.end()
			assert.Len(t, got(), 1)
		})
	})
	t.Run("large, resumed and unannounced bodies are recorded at once", func(t *testing.T) {
		for _, r := range []Resume{large, resumed, unknown} {
			synctest.Test(t, func(t *testing.T) {
				p, got := rec()
				p.started(r)
				assert.Equal(t, []Resume{r}, got(), "%+v", r)
				p.end()
			})
		}
	})
	t.Run("after the delay, the next request's part is recorded at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, got := rec()
			p.started(small)
			time.Sleep(partRecordDelay)
			synctest.Wait()
			again := Resume{Part: "a (restart).bin.part", Size: 1 << 10}
			p.started(again)
			assert.Equal(t, []Resume{small, again}, got())
		})
	})
	t.Run("a later record supersedes a waiting one", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, got := rec()
			p.started(small)
			p.started(large) // a restart into a large body
			time.Sleep(time.Hour)
			assert.Equal(t, []Resume{large}, got(), "the stale small record never lands after it")
		})
	})
	t.Run("nothing is recorded after end", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, got := rec()
			p.end()
			p.started(large)
			p.started(small)
			time.Sleep(time.Hour)
			assert.Empty(t, got())
		})
	})
}
