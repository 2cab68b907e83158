package demo

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchServe fetches the files of a Fast server over loopback, one after
// another (or from GOMAXPROCS goroutines when parallel), and reports body
// throughput. The client does no more than read and discard, so the figure
// is an upper bound on what the server can feed Heed.
func benchServe(b *testing.B, files, size int, parallel bool) {
	s, err := Start(FastConfig(1, files, size))
	require.NoError(b, err)
	b.Cleanup(func() { _ = s.Close() })
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	urls := s.URLs()

	get := func(u string, buf []byte) error {
		resp, err := c.Get(u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
		if err == nil && n != int64(size) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}

	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	if !parallel {
		buf := make([]byte, 64<<10)
		i := 0
		for b.Loop() {
			if err := get(urls[i%len(urls)], buf); err != nil {
				b.Fatal(err)
			}
			i++
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, 64<<10)
			i := 0
			for pb.Next() {
				if err := get(urls[i%len(urls)], buf); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(s.Requests())/b.Elapsed().Seconds(), "req/s")
}

func BenchmarkServe1KiB(b *testing.B)         { benchServe(b, 20000, 1<<10, false) }
func BenchmarkServe1KiBParallel(b *testing.B) { benchServe(b, 20000, 1<<10, true) }
func BenchmarkServe1MiB(b *testing.B)         { benchServe(b, 16, 1<<20, false) }
func BenchmarkServe1MiBParallel(b *testing.B) { benchServe(b, 16, 1<<20, true) }

// BenchmarkServe256MiB is the large-file case: B/op shows the server holds
// no file in memory.
func BenchmarkServe256MiB(b *testing.B) { benchServe(b, 4, 256<<20, false) }

// BenchmarkContentSHA256 is how fast Expected hashes a file it has not seen
// (content generation plus SHA-256).
func BenchmarkContentSHA256(b *testing.B) {
	block := newBlock(1)
	f := newFileInfo(1, "h", 0, 64<<20, 64<<20)
	b.SetBytes(f.size)
	for b.Loop() {
		_ = f.sum(block)
	}
}

// BenchmarkContentRead is the raw speed of content generation through Read
// with a 32 KiB buffer, as http.ServeContent uses it.
func BenchmarkContentRead(b *testing.B) {
	block := newBlock(1)
	f := newFileInfo(1, "h", 0, 64<<20, 64<<20)
	buf := make([]byte, 32<<10)
	b.SetBytes(f.size)
	for b.Loop() {
		c := &content{f: &f, block: block}
		for {
			if _, err := c.Read(buf); err == io.EOF {
				break
			}
		}
	}
}
