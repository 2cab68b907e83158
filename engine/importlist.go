package engine

// Reading back what heed export (WriteJobsJSON) wrote: heed import and the
// window's Import take only each job's URL, and queue it as a pasted list.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync/atomic"

	"heed/engine/fetch"
)

// ErrBadImportLine says a line of an import file is neither a URL list line
// nor a job object; the error wraps it with the line's number.
var ErrBadImportLine = errors.New("line")

// maxImportLine is the longest line of an import file: a job object with
// an 8 KiB URL fits many times over.
const maxImportLine = 1 << 20

// ImportList copies the URLs of an export file (or a plain list) from r to
// w, a line for a line, and stops with the line's number at one that is
// malformed. masked counts the URLs whose password was masked.
func ImportList(r io.Reader, w io.Writer, masked *atomic.Int64) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxImportLine)
	bw := bufio.NewWriter(w)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' {
			u, err := importURL(t)
			if err != nil {
				bw.Flush()
				return fmt.Errorf("%w %d: %v", ErrBadImportLine, n, err)
			}
			if strings.Contains(u, ":***@") {
				u = unmasked(u, masked)
			}
			line = []byte(fetch.OneURL(u))
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		bw.Flush()
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w %d: longer than %d KiB", ErrBadImportLine, n+1, maxImportLine>>10)
		}
		return err
	}
	return bw.Flush()
}

// importURL is the url of a job line of heed export or heed jobs --json.
func importURL(line []byte) (string, error) {
	var j struct {
		URL *string `json:"url"`
	}
	if err := json.Unmarshal(line, &j); err != nil {
		return "", fmt.Errorf("not a job line of heed export: %v", err)
	}
	if j.URL == nil || *j.URL == "" {
		return "", errors.New(`a job line of heed export has a "url"; this one has none`)
	}
	return *j.URL, nil
}

// unmasked is u without the password heed export masked, counted in n.
func unmasked(u string, n *atomic.Int64) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	if pw, ok := p.User.Password(); ok && pw == "***" {
		p.User = url.User(p.User.Username())
		n.Add(1)
		return p.String()
	}
	return u
}
