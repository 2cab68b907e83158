package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sync"
)

// PlainGet is the floor of the comparison: what a few lines of Go do with no
// politeness, no database and no resume. workers goroutines share one
// http.Client and take URLs from urls in order; each body is written to
// dir/<last path segment of its URL>. It stops at the first error (a status
// other than 200 is one) and returns it.
func PlainGet(ctx context.Context, urls []string, dir string, workers int) error {
	return plainGetTuned(ctx, urls, dir, workers, nil)
}

// PlainGetSHA256 is PlainGet that also takes the SHA-256 of each body as it
// is written, as Heed must (F7), and calls sum with each file's name and hex
// digest (from any worker; nil to drop them). Beside PlainGet it shows what
// hashing alone costs a client.
func PlainGetSHA256(ctx context.Context, urls []string, dir string, workers int, sum func(name, hexSum string)) error {
	if sum == nil {
		sum = func(string, string) {}
	}
	return plainGetTuned(ctx, urls, dir, workers, sum)
}

// PlainGetDefault is PlainGet with the client a first version of it uses:
// http.DefaultClient, whose transport keeps at most two idle
// connections to a host (http.DefaultMaxIdleConnsPerHost). With the URLs in
// host order, workers requests go to one host at a time, so most of them
// find no idle connection and open one, which is then closed again. PlainGet
// keeps workers idle connections to each host instead.
func PlainGetDefault(ctx context.Context, urls []string, dir string, workers int) error {
	return plainGet(ctx, http.DefaultClient, urls, dir, workers, nil)
}

func plainGetTuned(ctx context.Context, urls []string, dir string, workers int, sum func(name, hexSum string)) error {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: workers, MaxIdleConns: 4 * workers}
	defer tr.CloseIdleConnections()
	return plainGet(ctx, &http.Client{Transport: tr}, urls, dir, workers, sum)
}

func plainGet(ctx context.Context, c *http.Client, urls []string, dir string, workers int, sum func(name, hexSum string)) error {
	if workers < 1 {
		return errors.New("bench: PlainGet needs at least one worker")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for u := range next {
				if err := plainOne(ctx, c, u, dir, buf, sum); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for _, u := range urls {
		select {
		case next <- u:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

func plainOne(ctx context.Context, c *http.Client, rawURL, dir string, buf []byte, sum func(name, hexSum string)) error {
	name, err := FileName(rawURL)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", rawURL, resp.Status)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	var body io.Reader = resp.Body
	var h hash.Hash
	if sum != nil {
		h = sha256.New()
		body = io.TeeReader(resp.Body, h)
	}
	if _, err := io.CopyBuffer(f, body, buf); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", rawURL, err)
	}
	if h != nil {
		sum(name, hex.EncodeToString(h.Sum(nil)))
	}
	return f.Close()
}

// FileName is the name every tool gives the file at rawURL: the last
// segment of its path, unescaped.
func FileName(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		return "", fmt.Errorf("bench: %s has no file name", rawURL)
	}
	return name, nil
}

// Want is a file a run must leave behind.
type Want struct {
	Name   string // file name inside the download folder
	Size   int64
	SHA256 string // hex; empty to check the size only
}

// Verify checks that dir holds every file of want with its size, and the
// bytes of those with a SHA256. It reports every file that is missing or
// wrong (up to ten, then a count), so a run that did not download
// everything is an error rather than a figure.
func Verify(dir string, want []Want) error {
	var bad []string
	miss := 0
	for _, w := range want {
		err := verifyOne(filepath.Join(dir, w.Name), w)
		if err == nil {
			continue
		}
		miss++
		if len(bad) < 10 {
			bad = append(bad, err.Error())
		}
	}
	if miss == 0 {
		return nil
	}
	return fmt.Errorf("bench: %d of %d files missing or wrong in %s: %v", miss, len(want), dir, bad)
}

func verifyOne(p string, w Want) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.Size() != w.Size {
		return fmt.Errorf("%s: %d bytes, want %d", w.Name, st.Size(), w.Size)
	}
	if w.SHA256 == "" {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != w.SHA256 {
		return fmt.Errorf("%s: sha256 %s, want %s", w.Name, got, w.SHA256)
	}
	return nil
}
