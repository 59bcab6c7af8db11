package serving

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// Fake model servers: this test binary, run again with a model server's
// command line (argv[0] "vllm" with "serve", "text-generation-router", or
// copied to a file named tritonserver), serves a fixture on loopback, in
// the test's network namespace or in one of its own. A real server needs
// a GPU and gigabytes of weights; what the Source reads of one is its
// processes (their command lines, titles, sockets and namespaces, which
// these fakes have for real) and its /metrics, which the fixtures are
// the servers' own documented output of.

// The environment of a fake server.
const (
	envMode    = "XPUSCOPE_FAKE_SERVER" // what it does: serve, hang, huge, huge-length, garbage, none, engine
	envPayload = "XPUSCOPE_FAKE_PAYLOAD"
	envSwitch  = "XPUSCOPE_FAKE_SWITCH" // a payload served after SIGUSR1
	envInfo    = "XPUSCOPE_FAKE_INFO"   // a file served at /info
	envPort    = "XPUSCOPE_FAKE_PORT"   // listen on 127.0.0.1:port (else on fd 3)
	envNetNS   = "XPUSCOPE_FAKE_NETNS"  // set: in a new network namespace, bring lo up first
	envEngine  = "XPUSCOPE_FAKE_ENGINE" // set: start a vLLM engine core child, its pid written to this file
	envReady   = "XPUSCOPE_FAKE_READY"  // a file written once it listens
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		if err := fakeServer(mode); err != nil {
			fmt.Fprintln(os.Stderr, "fake server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeServer is the fake's main.
func fakeServer(mode string) error {
	// The test holds the other end of stdin: the fake ends with it, even
	// when the test is killed. (Not Pdeathsig: it fires when the thread
	// that started the child ends, and the Source under test ends the
	// threads it enters other network namespaces on.)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	if mode == "engine" {
		// vLLM's engine core: setproctitle gives it the title
		// VLLM::EngineCore, which the kernel keeps 15 bytes of as its
		// name; its command line is the title (argv[0], set by the
		// parent). The name is the leader thread's, which /proc/self/comm
		// names from any thread; PR_SET_NAME would name the calling one,
		// and the main goroutine need not be on the leader.
		if err := os.WriteFile("/proc/self/comm", []byte("VLLM::EngineCore"), 0); err != nil {
			return err
		}
		select {}
	}
	if os.Getenv(envNetNS) != "" {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if path := os.Getenv(envEngine); path != "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(exe)
		cmd.Args = []string{"VLLM::EngineCore"}
		cmd.Env = append(os.Environ(), envMode+"=engine")
		cmd.Stdin = os.Stdin // the test's pipe: it ends with the test too
		// The API server does not start other processes, nor end threads.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			return err
		}
	}
	if mode == "none" { // looks like a server, serves nothing
		return ready()
	}
	var l net.Listener
	var err error
	if port := os.Getenv(envPort); port != "" {
		l, err = net.Listen("tcp", "127.0.0.1:"+port)
	} else {
		l, err = net.FileListener(os.NewFile(3, "listener"))
	}
	if err != nil {
		return err
	}
	var payload atomic.Pointer[[]byte]
	b, err := os.ReadFile(os.Getenv(envPayload))
	if err != nil && mode == "serve" {
		return err
	}
	payload.Store(&b)
	if next := os.Getenv(envSwitch); next != "" {
		nb, err := os.ReadFile(next)
		if err != nil {
			return err
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGUSR1)
		go func() {
			<-sig
			payload.Store(&nb)
		}()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		switch mode {
		case "hang":
			<-r.Context().Done()
			return
		case "huge", "huge-length":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			line := bytes.Repeat([]byte("# padding padding padding padding padding padding padding padding\n"), 1<<10)
			total := 10 << 20 / len(line) * len(line)
			if mode == "huge-length" { // says how long it is: refused from the header
				w.Header().Set("Content-Length", strconv.Itoa(total))
			}
			for n := 0; n < total; n += len(line) {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
			return
		case "garbage":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte("\x00\x01{{{ this is not exposition }}} 12 13 14\nvllm:num_requests_running{model_name=\"m\" 1\n"))
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(*payload.Load())
	})
	if info := os.Getenv(envInfo); info != "" {
		ib, err := os.ReadFile(info)
		if err != nil {
			return err
		}
		mux.HandleFunc("/info", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(ib)
		})
	}
	if err := ready(); err != nil {
		return err
	}
	return http.Serve(l, mux)
}

// ready says the fake is up, and blocks for a server of mode none.
func ready() error {
	if err := os.WriteFile(os.Getenv(envReady), []byte("ok"), 0o644); err != nil {
		return err
	}
	if os.Getenv(envMode) == "none" {
		select {}
	}
	return nil
}

// loopbackUp brings up the loopback interface of a new network
// namespace, which starts down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// fake is a fake server the test started.
type fake struct {
	cmd    *exec.Cmd
	port   int
	engine int // the pid of its engine core, for vLLM
}

// fakeOpts says how to start a fake.
type fakeOpts struct {
	mode    string   // default serve
	args    []string // its command line, argv[0] first
	exeName string   // the file it is run as, a copy of the test binary ("" for the test binary)
	payload string   // a fixture
	next    string   // a fixture served after SIGUSR1
	info    string   // a fixture served at /info
	netns   bool     // in a network namespace of its own
	engine  bool     // with a vLLM engine core child
	port    int      // in its own namespace: the port; else 0 (the test's listener's)
}

// startFake starts a fake server and waits until it listens. Outside a
// namespace of its own it serves on a listener the test made, whose port
// is in its command line where %d is.
func startFake(t testing.TB, o fakeOpts) *fake {
	t.Helper()
	testutil.Native(t, "the test binary run again as a program")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "a fake server in a network namespace of its own, and reading other processes' sockets, need root")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	if o.exeName != "" {
		b, err := os.ReadFile(exe)
		require.NoError(t, err)
		exe = filepath.Join(dir, o.exeName)
		require.NoError(t, os.WriteFile(exe, b, 0o755))
	}
	f := &fake{port: o.port}
	mode := o.mode
	if mode == "" {
		mode = "serve"
	}
	cmd := exec.Command(exe)
	env := append(os.Environ(), envMode+"="+mode, envReady+"="+filepath.Join(dir, "ready"))
	if o.payload != "" {
		payload := o.payload
		if !filepath.IsAbs(payload) {
			payload = filepath.Join(testdataDir(t), payload)
		}
		env = append(env, envPayload+"="+payload)
	}
	if o.next != "" {
		env = append(env, envSwitch+"="+filepath.Join(testdataDir(t), o.next))
	}
	if o.info != "" {
		env = append(env, envInfo+"="+filepath.Join(testdataDir(t), o.info))
	}
	if o.engine {
		env = append(env, envEngine+"="+filepath.Join(dir, "engine"))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { stdin.Close() })
	if o.netns {
		require.NotZero(t, o.port, "a fake in its own namespace needs a port")
		env = append(env, envNetNS+"=1", envPort+"="+strconv.Itoa(o.port))
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	} else if mode != "none" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		f.port = l.Addr().(*net.TCPAddr).Port
		lf, err := l.(*net.TCPListener).File()
		require.NoError(t, err)
		l.Close()
		cmd.ExtraFiles = []*os.File{lf}
		defer lf.Close()
	}
	args := make([]string, len(o.args))
	for i, a := range o.args {
		args[i] = strings.ReplaceAll(a, "%d", strconv.Itoa(f.port))
	}
	cmd.Args = args
	cmd.Env = env
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	f.cmd = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	}, 30*time.Second, 5*time.Millisecond, "the fake %v never said it was ready", o.args)
	if o.engine {
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "engine"))
			if err != nil {
				return false
			}
			if f.engine, err = strconv.Atoi(string(b)); err != nil {
				return false
			}
			// Up once it has its title.
			comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", f.engine))
			return err == nil && string(comm) == "VLLM::EngineCor\n"
		}, 30*time.Second, 5*time.Millisecond, "the fake's engine core")
	}
	return f
}

func testdataDir(t testing.TB) string {
	dir, err := filepath.Abs("testdata")
	require.NoError(t, err)
	return dir
}
