package engine_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// startsSeen is a Store that notes each job whose start was committed.
type startsSeen struct {
	engine.Store
	started sync.Map // URL → true, once StartJobs returned it active
}

func (s *startsSeen) StartJobs(ctx context.Context, ids []int64) ([]engine.JobRecord, error) {
	jobs, err := s.Store.StartJobs(ctx, ids)
	for _, j := range jobs {
		if j.ID != 0 {
			s.started.Store(j.URL, true)
		}
	}
	return jobs, err
}

// L1, J3: however an attempt's slot is taken again — by the run loop, or
// by the goroutine of the attempt that just freed it — no more requests
// are in flight than Workers allows, and no request is sent before its
// job's start is committed. Four hosts whose answers take a moment, so
// that requests overlap; 200 small files, Workers 3.
func TestEngine_L1_J3_SlotsTakenAgainWithinTheCapAfterTheStart(t *testing.T) {
	const workers = 3
	var (
		store     *startsSeen
		inflight  atomic.Int64
		most      atomic.Int64
		early     atomic.Int64 // requests whose job's start was not committed
		requested atomic.Int64
	)
	var urls []string
	for h := range 4 {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requested.Add(1)
			if _, ok := store.started.Load(srv.URL + r.URL.Path); !ok {
				early.Add(1)
			}
			n := inflight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inflight.Add(-1) // before the body: once it is read, the slot is free
			io.WriteString(w, "body of "+r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		for i := range 50 {
			urls = append(urls, fmt.Sprintf("%s/h%d-%02d.txt", srv.URL, h, i))
		}
	}
	base := t.TempDir()
	db, eng := engineOver(t, filepath.Join(base, "heed.db"), filepath.Join(base, "dl"),
		func(s engine.Store) engine.Store { store = &startsSeen{Store: s}; return store }, urls,
		func(o *engine.Options) { o.Workers = workers })
	require.NoError(t, eng.RunUntilIdle(context.Background()))

	assert.Equal(t, int64(len(urls)), requested.Load(), "each file fetched once")
	assert.Zero(t, early.Load(), "no request before its job's start was committed")
	assert.LessOrEqual(t, most.Load(), int64(workers), "never more requests in flight than Workers")
	assert.Equal(t, int64(workers), most.Load(), "the slots were all used")
	counts, err := db.CountsByState(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(len(urls)), counts[storage.StateDone])
}
