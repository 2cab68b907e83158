package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// slowStarts is a Store whose every other Start takes a while to commit, as
// a loaded machine's or a shared database's sometimes does.
type slowStarts struct {
	engine.Store
	n    atomic.Int64
	slow time.Duration
}

func (s *slowStarts) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	if s.n.Add(1)%2 == 1 {
		time.Sleep(s.slow)
	}
	return s.Store.Start(ctx, id, part)
}

// G2 as the server sees it: with a bucket of one, a request whose start was
// slow to commit is not followed by the next one sooner than the rate
// allows; the interval runs from the send, not from the dispatch.
func TestEngine_G2_SlowStartDoesNotBringTheNextRequestCloser(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		fmt.Fprint(w, "x")
	}))
	defer srv.Close()
	db, err := storage.Open(filepath.Join(t.TempDir(), "heed.db"))
	require.NoError(t, err)
	defer db.Close()
	const interval = 200 * time.Millisecond
	tun := engine.DefaultTunables()
	tun.RatePerMin, tun.Burst, tun.MaxInflight, tun.JitterMin, tun.JitterMax = 300, 1, 1, 0, 0
	e, err := engine.New(context.Background(), &slowStarts{Store: db, slow: 150 * time.Millisecond},
		engine.Options{Dir: t.TempDir(), Defaults: tun})
	require.NoError(t, err)
	defer e.Close()
	var urls []string
	for i := range 8 {
		urls = append(urls, fmt.Sprintf("%s/f%d", srv.URL, i))
	}
	_, err = e.Add(context.Background(), strings.Join(urls, "\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, e.RunUntilIdle(ctx))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, arrivals, len(urls))
	for i := 1; i < len(arrivals); i++ {
		// 30 ms for the time between the send and its arrival; without the
		// interval from the send, a slow start leaves only about 50 ms.
		assert.GreaterOrEqual(t, arrivals[i].Sub(arrivals[i-1]), interval-30*time.Millisecond, "requests %d and %d", i-1, i)
	}
}
