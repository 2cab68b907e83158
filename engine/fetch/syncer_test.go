package fetch

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Received comes once the whole body is in the part and before the part
// is made final, so the caller can free the host while the file is synced.
func TestFetch_F4_ReceivedBeforeTheFinalName(t *testing.T) {
	e := newEnv(t, nil)
	content := body(5000)
	ts, _ := serveFile(t, content, `"v1"`, nil)
	calls := 0
	res := e.do(ts.URL+"/file.bin", func(r *Request) {
		r.Received = func(got Result) {
			calls++
			assert.Equal(t, OK, got.Class)
			assert.Equal(t, 200, got.Status)
			assert.Equal(t, int64(len(content)), got.Bytes)
			assert.False(t, got.Done, "not final yet")
			assert.Equal(t, map[string]string{"file.bin.part": content}, e.files(),
				"the whole body is in the part, and no final name exists yet (F4)")
		}
	})
	require.Equal(t, OK, res.Class, "%v", res.Err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, map[string]string{"file.bin": content}, e.files())
}

// A failed download never reports Received.
func TestFetch_F4_NoReceivedForATruncatedBody(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("short"))
	}))
	t.Cleanup(ts.Close)
	res := e.do(ts.URL+"/f", func(r *Request) {
		r.Received = func(Result) { t.Error("Received for an incomplete body") }
	})
	assert.Equal(t, Truncated, res.Class)
}

// Many downloads finishing at once are synced together and each gets its
// own final name with its own bytes (F3, F4).
func TestFetch_F4_ConcurrentFinishesAllLand(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat(r.URL.Path, 100)))
	}))
	t.Cleanup(ts.Close)
	const n = 64
	var wg sync.WaitGroup
	results := make([]Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.do(fmt.Sprintf("%s/f%02d", ts.URL, i), nil)
		}()
	}
	wg.Wait()
	want := map[string]string{}
	for i, res := range results {
		require.Equal(t, OK, res.Class, "%v", res.Err)
		name := fmt.Sprintf("f%02d", i)
		assert.Equal(t, name, res.File)
		want[name] = strings.Repeat("/"+name, 100)
	}
	assert.Equal(t, want, e.files())
}

// The syncer wakes every waiter with its own result, batch after batch,
// and never leaves one waiting.
func TestSyncer_EveryWaiterReturns(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := e.f.root.Create(fmt.Sprintf("s%03d", i))
			if !assert.NoError(t, err) {
				return
			}
			defer f.Close()
			f.WriteString("x")
			assert.NoError(t, e.f.syncer.sync(f))
		}()
	}
	wg.Wait()
	e.f.syncer.mu.Lock()
	defer e.f.syncer.mu.Unlock()
	assert.False(t, e.f.syncer.busy)
	assert.Empty(t, e.f.syncer.queue)
}
