// Command rusage runs a command and writes what it cost — wall time, user
// and system CPU time and peak resident set — as JSON to a file:
//
//	rusage -o FILE [-ready] -- COMMAND [ARG...]
//
// It exists because a Go program's children inherit its peak RSS: Go starts
// a child with clone(CLONE_VM|CLONE_VFORK), so until exec the child shares
// the parent's memory, and the kernel carries that high-water mark into the
// child's ru_maxrss. Measured from the e2e driver, which serves the demo
// hosts, every tool would show the driver's RSS as its floor. rusage is a
// small process, so the floor it lends its child is a few MiB (the report
// gives the figure, measured on `true`).
//
// SIGINT and SIGTERM are passed on to the command. With -ready, rusage
// writes one byte to file descriptor 3 and closes it once it passes them
// on, so a caller knows that an interrupt from then on reaches the command. rusage exits with the
// command's status, or 128+N when a signal N ended it.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// Result is what rusage writes; durations in nanoseconds, RSS in bytes.
type Result struct {
	Wall   time.Duration `json:"wall"`
	User   time.Duration `json:"user"`
	Sys    time.Duration `json:"sys"`
	MaxRSS int64         `json:"max_rss"`
}

func run(args []string, stderr io.Writer) int {
	if len(args) < 4 || args[0] != "-o" {
		fmt.Fprintln(stderr, "usage: rusage -o FILE [-ready] -- COMMAND [ARG...]")
		return 2
	}
	out, rest := args[1], args[2:]
	ready := false
	if rest[0] == "-ready" {
		ready, rest = true, rest[1:]
	}
	if len(rest) < 2 || rest[0] != "--" {
		fmt.Fprintln(stderr, "usage: rusage -o FILE [-ready] -- COMMAND [ARG...]")
		return 2
	}
	argv := rest[1:]
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	if ready {
		f := os.NewFile(3, "ready")
		_, _ = f.Write([]byte{1})
		f.Close()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "rusage:", err)
		return 127
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sig:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	res := Result{Wall: time.Since(start)}
	ps := cmd.ProcessState
	res.User, res.Sys = ps.UserTime(), ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSS = int64(ru.Maxrss) << 10 // KiB on Linux
	}
	b, _ := json.Marshal(res)
	if werr := os.WriteFile(out, b, 0o644); werr != nil {
		fmt.Fprintln(stderr, "rusage:", werr)
		return 125
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(stderr, "rusage:", err)
		return 125
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
