package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Measure is what one run of a child process cost.
type Measure struct {
	Wall   time.Duration `json:"wall"`    // from start to exit
	User   time.Duration `json:"user"`    // user CPU time of the child
	Sys    time.Duration `json:"sys"`     // system CPU time of the child
	MaxRSS int64         `json:"max_rss"` // peak resident set of the child, bytes
	// Sync is how long writing the child's files to disk took after it
	// exited (SyncDir), for tools that leave them in the page cache.
	Sync time.Duration `json:"-"`
	// Idle is the share of the machine's CPU time (every CPU, from
	// /proc/stat) that was idle or waiting for the disk while the child
	// ran: what it left unused of the machine, the demo hosts and the
	// kernel's work for it included in the rest. -1 when unknown.
	Idle float64 `json:"-"`
}

// Runner runs child processes and measures them.
//
// A Go program's children inherit its peak RSS: Go starts them with
// clone(CLONE_VM|CLONE_VFORK), so until exec a child shares the parent's
// memory and the kernel carries that high-water mark into its ru_maxrss.
// With Wrapper set to the bench/cmd/rusage command, each child runs under
// that small process, which measures it and writes the figures to a file
// in Dir; the floor it lends the child is its own few MiB. With Wrapper
// empty, children run directly and MaxRSS is at least the caller's peak.
type Runner struct {
	Wrapper string
	Dir     string
}

// Run runs cmd to completion and measures it. Its standard output is
// discarded unless cmd sets one; the last 4 KiB of standard error are kept
// for the error when the exit status is not zero.
func (r Runner) Run(cmd *exec.Cmd) (Measure, error) {
	ch, err := r.Start(cmd)
	if err != nil {
		return Measure{}, err
	}
	<-ch.done
	m, err := ch.measure()
	if err == nil && !ch.cmd.ProcessState.Success() {
		err = ch.failure()
	}
	return m, err
}

// RunChild is Runner{}.Run: cmd runs directly, not under the wrapper.
func RunChild(cmd *exec.Cmd) (Measure, error) { return Runner{}.Run(cmd) }

// StartChild is Runner{}.Start.
func StartChild(cmd *exec.Cmd) (*Child, error) { return Runner{}.Start(cmd) }

// Child is a process started by Runner.Start, to be stopped with Interrupt
// like a person pressing Ctrl-C.
type Child struct {
	cmd    *exec.Cmd
	name   string // the command as given, for errors
	result string // the wrapper's result file, "" without a wrapper
	start  time.Time
	tail   tailBuffer
	done   chan struct{}
	err    error
	cpu0   cpuTimes // the machine's CPU times at start and at exit
	cpu1   cpuTimes
}

// Start starts cmd (under the wrapper when there is one); its standard
// error is kept as in Run.
func (r Runner) Start(cmd *exec.Cmd) (*Child, error) {
	c := &Child{cmd: cmd, name: cmd.Path, done: make(chan struct{})}
	if r.Wrapper != "" {
		f, err := os.CreateTemp(r.Dir, "rusage-*.json")
		if err != nil {
			return nil, err
		}
		f.Close()
		c.result = f.Name()
		w := exec.Command(r.Wrapper, append([]string{"-o", c.result, "-ready", "--", cmd.Path}, cmd.Args[1:]...)...)
		w.Dir, w.Env, w.Stdin, w.Stdout, w.Stderr = cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr
		c.cmd = w
	}
	var ready *os.File
	if c.result != "" {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		ready = pr
		defer pr.Close()
		c.cmd.ExtraFiles = []*os.File{pw}
		defer pw.Close()
	}
	if c.cmd.Stderr == nil {
		c.cmd.Stderr = &c.tail
	}
	c.cpu0 = readCPUTimes()
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	if ready != nil {
		// Wait until the wrapper passes SIGINT on, so that an early
		// Interrupt stops the command rather than the wrapper.
		c.cmd.ExtraFiles[0].Close()
		_, _ = ready.Read(make([]byte, 1)) // a byte, or EOF if the wrapper died
	}
	go func() {
		c.err = c.cmd.Wait()
		c.cpu1 = readCPUTimes()
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
	m, err := c.measure()
	if err != nil {
		return m, err
	}
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() && ws.Signal() == syscall.SIGINT {
			return m, nil
		}
		if ws.Exited() && (ws.ExitStatus() == 0 || ws.ExitStatus() == 130) {
			return m, nil
		}
	}
	return m, c.failure()
}

// Signal sends sig to the child (through the wrapper, which passes SIGINT
// and SIGTERM on), unless it has exited.
func (c *Child) Signal(sig os.Signal) error {
	select {
	case <-c.done:
		return nil
	default:
		return c.cmd.Process.Signal(sig)
	}
}

// ExitCode is the child's exit status once it has exited (the command's
// own through the wrapper, which gives 128+N for a signal N), -1 before.
func (c *Child) ExitCode() int {
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

func (c *Child) failure() error {
	return fmt.Errorf("%s: %v: %s", c.name, c.err, bytes.TrimSpace(c.tail.b))
}

// measure reads the wrapper's figures, or the child's own rusage.
func (c *Child) measure() (Measure, error) {
	ps := c.cmd.ProcessState
	idle := c.cpu1.idleSince(c.cpu0)
	if c.result == "" {
		m := Measure{Wall: time.Since(c.start), User: ps.UserTime(), Sys: ps.SystemTime(), Idle: idle}
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			m.MaxRSS = int64(ru.Maxrss) << 10 // KiB on Linux
		}
		return m, nil
	}
	defer os.Remove(c.result)
	var m Measure
	b, err := os.ReadFile(c.result)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return m, fmt.Errorf("%s: no figures from the rusage wrapper (%v): %s", c.name, err, bytes.TrimSpace(c.tail.b))
	}
	m.Idle = idle
	return m, nil
}

// cpuTimes is the machine's CPU time so far, in clock ticks, from the
// first line of /proc/stat: all of it, and the part idle or waiting for
// the disk. Zero when unknown.
type cpuTimes struct{ total, idle uint64 }

func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return parseCPUTimes(string(line))
}

// parseCPUTimes reads the "cpu" line of /proc/stat: user nice system idle
// iowait irq softirq steal (guest time is counted in user already).
func parseCPUTimes(line string) cpuTimes {
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return cpuTimes{}
	}
	var t cpuTimes
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}
		}
		t.total += v
		if i == 3 || i == 4 { // idle, iowait
			t.idle += v
		}
	}
	return t
}

// idleSince is the idle share of the CPU time between then and t, or -1
// when either is unknown or no tick passed.
func (t cpuTimes) idleSince(then cpuTimes) float64 {
	if t.total == 0 || then.total == 0 || t.total <= then.total || t.idle < then.idle {
		return -1
	}
	return float64(t.idle-then.idle) / float64(t.total-then.total)
}

// SyncDir flushes the file system that holds dir to disk (syncfs(2)) and
// returns how long that took: what a tool that does not fsync its files
// leaves to be done after it exits. It flushes other writers' data on the
// same file system too, so on a shared machine it is an upper bound.
func SyncDir(dir string) (time.Duration, error) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := time.Now()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return 0, fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return time.Since(start), nil
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

// CreateCost creates n files of 1 KiB in a new folder under dir, keeps them,
// and returns the CPU time (user + system, this thread only) per file: what
// a file create costs on the download folders' file system at that moment.
// On a file system made for the run it is a few tens of µs; far more says
// the file system carries earlier work (an aged ext4 without a journal
// checks every recently freed inode on each create).
func CreateCost(dir string, n int) (time.Duration, error) {
	probe, err := os.MkdirTemp(dir, "create-cost-")
	if err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	body := make([]byte, 1024)
	before, err := threadCPU()
	if err != nil {
		return 0, err
	}
	for i := range n {
		f, err := os.OpenFile(filepath.Join(probe, fmt.Sprintf("f%05d", i)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		_, err = f.Write(body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
	}
	after, err := threadCPU()
	if err != nil {
		return 0, err
	}
	return (after - before) / time.Duration(max(n, 1)), nil
}

func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
