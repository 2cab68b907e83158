//go:build unix

package cli

// One Heed on a database, and a hand-off to it.
//
// The Heed that holds an SQLite database (the window, heed get, heed crawl)
// listens on a Unix socket beside it, DATABASE.sock, which only its owner may
// open (0600). A heed add, or a second window, on the same database finds the
// socket, connects and sends one request: the URLs to queue, and whether to
// bring the window forward. The running Heed queues them through its engine,
// as heed add would have, and answers with what heed add prints and the code
// it exits with. One JSON request, one JSON answer, then the connection
// closes.
//
// A socket left by a crash answers nobody: the next Heed to hold the
// database replaces it. A socket that is not a socket, or that another user
// owns or others may open, is never trusted.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"heed/engine"
	"heed/engine/fetch"
	"heed/storage/postgres"
)

// maxList is the longest list handed over, some 200,000 URLs; a longer one
// is queued with heed add once the running Heed has stopped. maxHandoff is
// the largest request a running Heed reads: such a list, in JSON.
const (
	maxList    = 16 << 20
	maxHandoff = 2*maxList + 4096
)

// Deadlines of a hand-off: to send the request (the server's read), and
// for the whole exchange, the queueing of a long list included.
const (
	handoffReadTimeout = 10 * time.Second
	handoffTimeout     = 5 * time.Minute
)

// handoffRequest is what heed add or a second window sends.
type handoffRequest struct {
	URLs  string `json:"urls"` // the list, as heed add reads it: one or more URLs a line
	Again bool   `json:"again"`
	Quiet bool   `json:"quiet"`
	Focus bool   `json:"focus"` // bring the window forward
}

// handoffAnswer is what the running Heed answers.
type handoffAnswer struct {
	Report string `json:"report"` // heed add's lines: rejected URLs, the queued/duplicates tally
	Code   int    `json:"code"`   // heed add's exit code
	Window bool   `json:"window"` // a window was asked forward, and there is one
}

// SocketPath is the hand-off socket of the SQLite database at dbPath.
func SocketPath(dbPath string) string { return dbPath + ".sock" }

// Handoff is the socket a running Heed takes URLs on. Close it before the
// engine it queues into.
type Handoff struct {
	ln     *net.UnixListener
	path   string
	eng    *engine.Engine
	focus  func()
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ServeHandoff listens beside the database at dbPath and queues what other
// Heeds hand over into eng. focus, when set, brings the window forward; it
// is called on the socket's goroutine (wrap UI work in fyne.Do). A stale
// socket there is replaced; anything else there is left alone and is an
// error, as is a path too long for a socket: Heed runs all the same, without
// hand-off. A PostgreSQL queue has many Heeds, and no socket: it is nil.
func ServeHandoff(dbPath string, eng *engine.Engine, focus func()) (*Handoff, error) {
	if postgres.IsURL(dbPath) {
		return nil, nil
	}
	path := SocketPath(dbPath)
	if err := clearStale(path); err != nil {
		return nil, err
	}
	// Bound in a folder of its own that only we may enter, made 0600, then
	// moved into place: nobody can connect in between.
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".heed-sock-")
	if err != nil {
		return nil, fmt.Errorf("hand-off socket %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: bound, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("hand-off socket %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // it is removed at its final name, in Close
	if err := os.Chmod(bound, 0o600); err == nil {
		err = os.Rename(bound, path)
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("hand-off socket %s: %w", path, err)
	}
	h := &Handoff{ln: ln, path: path, eng: eng, focus: focus}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.wg.Add(1)
	go h.serve()
	return h, nil
}

// clearStale removes a socket at path that nobody answers on (Heed crashed).
func clearStale(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hand-off socket %s: %w", path, err)
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("hand-off socket %s: something else is there (not replaced)", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("hand-off socket %s: another Heed answers on it", path)
	}
	return os.Remove(path)
}

// Close stops taking hand-offs, waits for those under way and removes the
// socket. A nil Handoff closes too.
func (h *Handoff) Close() {
	if h == nil {
		return
	}
	h.ln.Close()
	h.cancel()
	h.wg.Wait()
	os.Remove(h.path)
}

func (h *Handoff) serve() {
	defer h.wg.Done()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of file descriptors, say: try again
			continue
		}
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			defer c.Close()
			h.answer(c)
		}()
	}
}

// answer reads one request from c, carries it out and answers it.
func (h *Handoff) answer(c net.Conn) {
	c.SetDeadline(time.Now().Add(handoffReadTimeout))
	body, err := io.ReadAll(io.LimitReader(c, maxHandoff+1))
	var req handoffRequest
	switch {
	case err != nil:
		return // the sender is gone
	case len(body) > maxHandoff:
		h.reply(c, handoffAnswer{Code: ExitUsage,
			Report: fmt.Sprintf("heed: the list is over %d MiB: too long to hand to the running Heed\n", maxList>>20)})
		return
	case json.Unmarshal(body, &req) != nil:
		h.reply(c, handoffAnswer{Code: ExitUsage, Report: "heed: the running Heed could not read the request\n"})
		return
	}
	c.SetDeadline(time.Now().Add(handoffTimeout))
	var a handoffAnswer
	if req.URLs != "" {
		a.Report, a.Code = queueList(h.ctx, h.eng, strings.NewReader(req.URLs), req.Again, req.Quiet)
	}
	if req.Focus && h.focus != nil {
		h.focus()
		a.Window = true
	}
	h.reply(c, a)
}

func (h *Handoff) reply(c net.Conn, a handoffAnswer) {
	json.NewEncoder(c).Encode(a)
}

// queueList queues the list in r into eng as heed add does, and returns
// what heed add prints and its exit code.
func queueList(ctx context.Context, eng *engine.Engine, r io.Reader, again, quiet bool) (string, int) {
	var out bytes.Buffer
	p := newProgress(Env{Stdout: io.Discard, Stderr: &out}, quiet)
	var tally addTally
	_, err := eng.AddFrom(ctx, r, engine.AddOptions{Again: again, Batch: func(b engine.AddReport) {
		tally.add(p, b, quiet, again)
	}})
	if err != nil {
		fmt.Fprintf(&out, "heed: queueing: %v\n", err)
		if tally.queued+tally.dups > 0 {
			fmt.Fprintf(&out, "heed: queued %d, duplicates %d before that; the rest of the list may not be\n",
				tally.queued, tally.dups)
		}
		if errors.Is(err, fetch.ErrNotAList) || errors.Is(err, engine.ErrBadImportLine) {
			return out.String(), ExitUsage
		}
		return out.String(), ExitUnusable
	}
	tally.more(p)
	p.say("queued %d, duplicates %d (queued again %d), rejected %d\n", tally.queued, tally.dups, tally.again, tally.rejected)
	switch {
	case tally.queued == 0 && tally.dups == 0:
		return out.String(), ExitUsage
	case tally.rejected > 0 || tally.failedBefore:
		return out.String(), ExitFailed
	}
	return out.String(), ExitOK
}

// errNoHandoff says that no Heed answers on the database's socket: the
// command goes on by itself.
// errUntrusted is a socket there that this user may not trust.
var (
	errNoHandoff = errors.New("no Heed answers on the database's socket")
	errUntrusted = errors.New("not handing over to the running Heed")
)

// dialHandoff connects to the Heed running on the database at dbPath, if
// one answers on a socket this user may trust: a socket, this user's, that
// only this user may open. Otherwise it is errNoHandoff, said why.
func dialHandoff(dbPath string) (net.Conn, error) {
	path := SocketPath(dbPath)
	st, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoHandoff, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case st.Mode()&os.ModeSocket == 0:
		return nil, fmt.Errorf("%w: %s is not a socket", errUntrusted, path)
	case !ok || int(sys.Uid) != os.Getuid():
		return nil, fmt.Errorf("%w: %s belongs to another user", errUntrusted, path)
	case st.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%w: others may open %s (mode %v)", errUntrusted, path, st.Mode().Perm())
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoHandoff, err)
	}
	return c, nil
}

// handOff sends req over c, which it closes, and returns the answer.
func handOff(c net.Conn, req handoffRequest) (handoffAnswer, error) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(handoffTimeout))
	body, err := json.Marshal(req)
	if err != nil {
		return handoffAnswer{}, err
	}
	if len(body) > maxHandoff {
		return handoffAnswer{}, fmt.Errorf("the list is over %d MiB: too long to hand to the running Heed", maxList>>20)
	}
	if _, err := c.Write(body); err != nil {
		return handoffAnswer{}, fmt.Errorf("handing over to the running Heed: %w", err)
	}
	c.(*net.UnixConn).CloseWrite() // the request is whole
	var a handoffAnswer
	if err := json.NewDecoder(io.LimitReader(c, maxHandoff)).Decode(&a); err != nil {
		return handoffAnswer{}, fmt.Errorf("the running Heed did not answer: %w", err)
	}
	return a, nil
}

// readList reads the list in for a hand-off, at most maxList bytes. A
// list that fails part way (a malformed line of heed import) is what was
// read before, with the error.
func readList(in io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(in, maxList+1))
	if err != nil {
		return string(b), err
	}
	if len(b) > maxList {
		return "", fmt.Errorf("the list is over %d MiB: too long to hand to the running Heed; queue it with heed add once it has stopped", maxList>>20)
	}
	return string(b), nil
}

// handOffAdd is heed add when another Heed runs on the database and
// answers on its socket: the list in goes to it, and its report is
// printed as heed add's own. ok is false when no Heed answers: add goes on
// by itself (and finds the database free, or says who holds it).
func handOffAdd(env Env, c *common, o *queueOpts, in io.Reader) (code int, ok bool) {
	path, conn := handoffConn(env, c)
	if conn == nil {
		return 0, false
	}
	list, readErr := readList(in)
	if readErr != nil && list == "" {
		conn.Close()
		fmt.Fprintf(env.Stderr, "heed: %v\n", readErr)
		return ExitUsage, true
	}
	a, err := handOff(conn, handoffRequest{URLs: list, Again: o.again, Quiet: o.quiet})
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %s: %v\n", path, err)
		return ExitUnusable, true
	}
	if !o.quiet {
		fmt.Fprintf(env.Stderr, "heed: Heed is running on %s: queued there\n", path)
	}
	fmt.Fprint(env.Stderr, a.Report)
	if readErr != nil { // what came before it is queued
		fmt.Fprintf(env.Stderr, "heed: queueing: %v; the lines before it are queued\n", readErr)
		return ExitUsage, true
	}
	return a.Code, true
}

// handOffWindow is heed (the window) when another Heed runs on the
// database: it queues urls there and asks that Heed to bring its window
// forward. ok is false when no Heed answers: the window opens.
func handOffWindow(env Env, c *common, urls []string) (code int, ok bool) {
	path, conn := handoffConn(env, c)
	if conn == nil {
		return 0, false
	}
	var list strings.Builder
	for _, u := range urls {
		list.WriteString(fetch.OneURL(u) + "\n")
	}
	a, err := handOff(conn, handoffRequest{URLs: list.String(), Focus: true})
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %s: %v\n", path, err)
		return ExitUnusable, true
	}
	fmt.Fprint(env.Stderr, a.Report)
	if !a.Window {
		fmt.Fprintf(env.Stderr, "heed: %s is in use by a Heed without a window (heed get or heed crawl); open the window once it ends\n", path)
		return ExitUnusable, true
	}
	fmt.Fprintf(env.Stderr, "heed: Heed is already running on %s: its window is brought forward\n", path)
	if a.Code != ExitOK {
		return a.Code, true
	}
	return ExitOK, true
}

// handoffConn connects to the Heed running on c's SQLite database, or is
// nil when none answers. A socket that is there but not trusted is said.
func handoffConn(env Env, c *common) (string, net.Conn) {
	path, err := DBPath(c.db)
	if err != nil || postgres.IsURL(path) {
		return path, nil
	}
	conn, err := dialHandoff(path)
	if err != nil {
		if errors.Is(err, errUntrusted) {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		}
		return path, nil
	}
	return path, conn
}
