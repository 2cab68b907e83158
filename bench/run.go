package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// Measure is what one run of a child process cost.
type Measure struct {
	Wall   time.Duration // from start to exit
	User   time.Duration // user CPU time of the child
	Sys    time.Duration // system CPU time of the child
	MaxRSS int64         // peak resident set of the child, bytes
}

// RunChild runs cmd to completion and measures it. Its standard output is
// discarded unless cmd sets one; the last 4 KiB of standard error are kept
// for the error when the exit status is not zero.
func RunChild(cmd *exec.Cmd) (Measure, error) {
	var tail tailBuffer
	if cmd.Stderr == nil {
		cmd.Stderr = &tail
	}
	start := time.Now()
	err := cmd.Run()
	m := Measure{Wall: time.Since(start)}
	if cmd.ProcessState != nil {
		m = measureOf(cmd.ProcessState, m.Wall)
	}
	if err != nil {
		return m, fmt.Errorf("%s: %w: %s", cmd.Path, err, bytes.TrimSpace(tail.b))
	}
	return m, nil
}

// measureOf reads the child's rusage (Maxrss is in KiB on Linux).
func measureOf(ps interface {
	UserTime() time.Duration
	SystemTime() time.Duration
	SysUsage() any
}, wall time.Duration) Measure {
	m := Measure{Wall: wall, User: ps.UserTime(), Sys: ps.SystemTime()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSS = int64(ru.Maxrss) << 10
	}
	return m
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - 4096; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// Child is a process started by StartChild, to be stopped with Interrupt
// like a person pressing Ctrl-C.
type Child struct {
	cmd   *exec.Cmd
	start time.Time
	tail  tailBuffer
	done  chan struct{}
	err   error
}

// StartChild starts cmd; its standard error is kept as in RunChild.
func StartChild(cmd *exec.Cmd) (*Child, error) {
	c := &Child{cmd: cmd, done: make(chan struct{})}
	if cmd.Stderr == nil {
		cmd.Stderr = &c.tail
	}
	c.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Started is when the child was started.
func (c *Child) Started() time.Time { return c.start }

// Exited is closed once the child has exited.
func (c *Child) Exited() <-chan struct{} { return c.done }

// Interrupt sends SIGINT (unless the child already exited), waits for the
// child and measures it. Exiting with status 0 or 130, or by the signal,
// is a clean stop; anything else is an error with the end of its standard
// error.
func (c *Child) Interrupt() (Measure, error) {
	select {
	case <-c.done:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		<-c.done
	}
	ps := c.cmd.ProcessState
	m := measureOf(ps, time.Since(c.start))
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() && ws.Signal() == syscall.SIGINT {
			return m, nil
		}
		if ws.Exited() && (ws.ExitStatus() == 0 || ws.ExitStatus() == 130) {
			return m, nil
		}
	}
	return m, fmt.Errorf("%s: %v: %s", c.cmd.Path, c.err, bytes.TrimSpace(c.tail.b))
}
