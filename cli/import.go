package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"heed/engine/fetch"
)

func newImportCmd(env Env, c *common) *cobra.Command {
	o := &queueOpts{}
	cmd := &cobra.Command{
		Use:   "import FILE | -",
		Short: "Queue the URLs of a heed export file (or of a URL list)",
		Long: `Queue the URLs of a file heed export wrote (one JSON object a line), or of a
plain list of URLs, into this database; - reads standard input. Only the URLs
are taken: each becomes a queued job, or is reported as a duplicate when this
database knows it already; nothing queued or downloaded here is changed.

A URL whose password heed export masked (user:***@) is queued without it:
give it again with its password if the server needs one. A line that is
neither a URL list line nor a job object stops the import with its line
number; the lines before it stay queued.

When another Heed runs on the database, it queues them, as for heed add.

Exit status: 0 when every URL was queued or known, 1 when a line was rejected
or a known URL had failed, 2 on bad usage or a malformed line, 3 when the
database is unusable.`,
		Example: `  heed export > queue.jsonl
  heed import --db other.db queue.jsonl
  heed export --db old.db --state queued | heed import -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runImport(cmd.Context(), env, c, o, args[0]))
		},
	}
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only problems and the summary")
	return cmd
}

func runImport(ctx context.Context, env Env, c *common, o *queueOpts, file string) int {
	in := env.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(env.Stderr, "heed: reading %s: %v\n", file, err)
			return ExitUsage
		}
		defer f.Close()
		in = f
	}
	// The file, as the URL list heed add reads: one line for each of its
	// lines, so that a rejected URL is named by its line in the file.
	pr, pw := io.Pipe()
	defer pr.Close()
	var masked atomic.Int64
	go func() { pw.CloseWithError(importList(in, pw, &masked)) }()
	env.Stdin, o.input = pr, "-"
	code := queueAndRun(ctx, env, c, o, nil, false)
	if n := masked.Load(); n > 0 {
		fmt.Fprintf(env.Stderr, "heed: %d URLs had their password masked by heed export: queued without it\n", n)
	}
	return code
}

// errBadLine says a line of an import file is neither a URL list line nor
// a job object: a usage error, with its line number.
var errBadLine = errors.New("line")

// maxImportLine is the longest line of an import file: a job object with
// an 8 KiB URL fits many times over.
const maxImportLine = 1 << 20

// importList copies the URLs of an export file (or a plain list) from r to
// w, a line for a line, and stops with the line's number at one that is
// malformed. masked counts the URLs whose password was masked.
func importList(r io.Reader, w io.Writer, masked *atomic.Int64) error {
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
				return fmt.Errorf("%w %d: %v", errBadLine, n, err)
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
			return fmt.Errorf("%w %d: longer than %d KiB", errBadLine, n+1, maxImportLine>>10)
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
