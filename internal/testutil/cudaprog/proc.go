package cudaprog

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// DefaultTimeout bounds each wait of a Proc unless its Timeout is set.
const DefaultTimeout = 2 * time.Minute

// Proc is a running scenario program. Its methods must be called from
// the test's goroutine.
type Proc struct {
	// Pid is the program's process id (the one it printed in READY).
	Pid int
	// Timeout bounds each wait (READY, a line, DONE, exit); Start sets
	// DefaultTimeout.
	Timeout time.Duration

	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu     sync.Mutex
	lines  []string
	eof    bool
	notify chan struct{} // signalled (cap 1) on each new line and at EOF
	stderr testutil.SyncBuffer
	next   int // index of the first line WaitLine has not consumed
	exited chan struct{}
	err    error // cmd.Wait's, valid once exited is closed
}

// Start starts exe with args and waits for its "READY <pid>" line.
func Start(t testing.TB, exe string, args ...string) *Proc {
	t.Helper()
	return StartCmd(t, exec.Command(exe, args...))
}

// StartCmd is Start for a prepared command (environment, e.g.
// LD_PRELOAD, or directory). It sets cmd's stdin, stdout and stderr.
func StartCmd(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{t: t, cmd: cmd, Timeout: DefaultTimeout, notify: make(chan struct{}, 1), exited: make(chan struct{})}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	go p.read(stdout)
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	line := p.WaitLine("READY ")
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "READY "))
	if err != nil || pid != cmd.Process.Pid {
		p.fatalf("bad READY line %q (pid %d)", line, cmd.Process.Pid)
	}
	p.Pid = pid
	return p
}

func (p *Proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		p.mu.Unlock()
		p.signal()
	}
	// Drain whatever is left (a line too long) so the child never blocks.
	_, _ = io.Copy(io.Discard, r)
	p.mu.Lock()
	p.eof = true
	p.mu.Unlock()
	p.signal()
	p.err = p.cmd.Wait()
	close(p.exited)
}

func (p *Proc) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// Go writes the go line: the program makes its calls. The dlopen program
// reads further lines (see testdata/dlopen.c); each Go writes one.
func (p *Proc) Go() {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		p.fatalf("writing the go line: %v", err)
	}
}

// WaitLine waits for the next line starting with prefix (lines before it
// are skipped but stay in Lines) and returns it.
func (p *Proc) WaitLine(prefix string) string {
	p.t.Helper()
	deadline := time.NewTimer(p.Timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for p.next < len(p.lines) {
			l := p.lines[p.next]
			p.next++
			if strings.HasPrefix(l, prefix) {
				p.mu.Unlock()
				return l
			}
		}
		eof := p.eof
		p.mu.Unlock()
		if eof {
			<-p.exited
			p.fatalf("exited (%v) before printing a line starting with %q", p.err, prefix)
		}
		select {
		case <-p.notify:
		case <-deadline.C:
			p.fatalf("no line starting with %q after %v", prefix, p.Timeout)
		}
	}
}

// Lines returns the lines printed so far.
func (p *Proc) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Stderr returns what the program printed on stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Wait waits for the DONE line and the program's exit, fails the test
// unless it exits with status 0, and returns every line it printed.
func (p *Proc) Wait() []string {
	p.t.Helper()
	p.WaitLine("DONE")
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(p.Timeout):
		p.fatalf("still running %v after DONE", p.Timeout)
	}
	if p.err != nil {
		p.fatalf("exited: %v", p.err)
	}
	return p.Lines()
}

// Kill kills the program and waits for it to exit.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *Proc) fatalf(format string, args ...any) {
	p.t.Helper()
	lines := p.Lines()
	if len(lines) > 40 {
		lines = append([]string{"..."}, lines[len(lines)-40:]...)
	}
	p.t.Fatalf("%s: %s\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args, " "), fmt.Sprintf(format, args...),
		strings.Join(lines, "\n"), p.Stderr())
}

// Terminal opens a new pseudo-terminal pair and returns its terminal end,
// to start a program with as its controlling terminal (in
// exec.Cmd.ExtraFiles, with SysProcAttr Setsid, Setctty and Ctty its
// descriptor number in the child): a process on a terminal, as a shell's
// job is. Both ends close with t.
func Terminal(t testing.TB) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testutil.SkipOrFail(t, "a pseudo-terminal is needed: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("cudaprog: unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("cudaprog: the pseudo-terminal's number: %v", err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("cudaprog: open the terminal end: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}
