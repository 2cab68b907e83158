package engine_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// S5: the completer waits for other downloads to finish with one only while
// requests are in flight. A download that ends with nothing else in flight
// is marked done and reported at once, not after the wait. Time is the
// bubble's: the database, the files and the fetcher are real, the network
// is an in-memory transport.
func TestEngine_S5_LastDownloadReportedWithoutTheLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		db, err := storage.Open(filepath.Join(base, "heed.db"))
		require.NoError(t, err)
		defer db.Close()
		var answered, reported []time.Time
		opt := engine.Options{Dir: filepath.Join(base, "dl"), Defaults: fast(), Version: "test",
			OnJob: func(j engine.JobEnd) {
				if j.Outcome == "ok" {
					reported = append(reported, time.Now())
				}
			}}
		opt.Fetch.Transport = transportFunc(func(req *http.Request) (*http.Response, error) {
			answered = append(answered, time.Now())
			return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Length": {"1024"}}, ContentLength: 1024,
				Body: io.NopCloser(strings.NewReader(strings.Repeat("x", 1024))), Request: req}, nil
		})
		eng, err := engine.New(context.Background(), db, opt)
		require.NoError(t, err)
		defer eng.Close()
		_, err = eng.Add(context.Background(), "http://a.example/1.bin")
		require.NoError(t, err)
		require.NoError(t, eng.RunUntilIdle(context.Background()))

		require.Len(t, answered, 1)
		require.Len(t, reported, 1)
		assert.Zero(t, reported[0].Sub(answered[0]), "reported as soon as it was done")
	})
}

// transportFunc is an in-memory http.RoundTripper.
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
