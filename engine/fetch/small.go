package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Get makes one exchange for a small file Heed reads itself rather than
// saves — a host's robots.txt (W4) — and returns its body, of at most
// limit bytes: the rest is not read and the connection is closed. Nothing
// is written to the download folder. A redirect is validated as Do
// validates it and returned in Result.Redirect, not followed: each hop goes
// through its host's governor. A body that stops for the idle timeout ends
// the exchange as a Timeout; a body cut short, as Truncated.
func (f *Fetcher) Get(ctx context.Context, u *url.URL, limit int64) (Result, []byte) {
	a := &exchange{f: f, req: Request{URL: u, UserURL: u}, progress: func(int64) {}, res: Result{Size: -1}}
	var body []byte
	a.memory = func(resp *http.Response) { body = a.readSmall(resp, limit) }
	a.run(ctx)
	return a.res, body
}

// readSmall reads at most limit bytes of resp's body, as Get does.
func (a *exchange) readSmall(resp *http.Response, limit int64) []byte {
	idle := time.AfterFunc(a.f.idle, func() { a.cancel(errIdle) })
	defer idle.Stop()
	var out []byte
	buf := make([]byte, 32<<10)
	r := io.LimitReader(resp.Body, limit)
	for {
		idle.Reset(a.f.idle)
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			a.failErr(err, true)
			return out
		}
	}
	a.res.Bytes, a.res.Received = int64(len(out)), int64(len(out))
	if cl := resp.ContentLength; cl >= 0 && int64(len(out)) < min(cl, limit) {
		a.fail(Truncated, true, fmt.Errorf("body ended at %d of %d bytes", len(out), cl))
		return out
	}
	a.res.Done = true
	return out
}
