package cudaprog

import (
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realGPU skips t on a machine with the NVIDIA kernel module: the
// programs pass fake handles and pointers that a working driver would act
// on, and the expected return codes are those of a GPU-less machine.
func realGPU(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/sys/module/nvidia"); err == nil {
		t.Skip("the NVIDIA kernel module is loaded: these programs are for GPU-less machines")
	}
}

func run(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	p := StartCmd(t, cmd)
	p.Go()
	return p.Wait()
}

// TestScenarios runs each scenario against the real libraries, without a
// tracer, and checks the return codes and counts its table promises.
func TestScenarios(t *testing.T) {
	realGPU(t)
	for _, s := range Scenarios {
		t.Run(s.Program+"/"+s.Name, func(t *testing.T) {
			t.Parallel()
			exe := Build(t, s.Program)
			lines := run(t, exec.Command(exe, s.Name))
			assert.Equal(t, s.Rets(), Rets(lines), "RET lines")
			if n := len(s.Threads); n > 1 {
				assert.Len(t, Threads(lines), n, "THREAD lines")
			}
			stubs := Stubs(lines)
			for _, c := range s.Calls() {
				if c.Func != "" {
					assert.NotZero(t, stubs[c.Func], "no STUB line for %s", c.Func)
				}
			}
		})
	}
}

// TestScenarioArguments checks, without a tracer, that the programs pass
// exactly the arguments the tables list: the runtime and driver programs
// run with the recorder preloaded, the static one with CUDAPROG_ECHO=1.
func TestScenarioArguments(t *testing.T) {
	for _, s := range Scenarios {
		t.Run(s.Program+"/"+s.Name, func(t *testing.T) {
			t.Parallel()
			exe := Build(t, s.Program)
			cmd := exec.Command(exe, s.Name)
			if s.Program == "static" {
				cmd.Env = append(os.Environ(), "CUDAPROG_ECHO=1")
			} else {
				cmd.Env = append(os.Environ(), "LD_PRELOAD="+Build(t, "recorder"))
			}
			p := StartCmd(t, cmd)
			p.Go()
			lines := p.Wait()
			tids := Threads(lines)
			threads := s.Threads
			if len(s.Threads) == 1 {
				tids = map[int]int{0: p.Pid}
				threads = [][]Call{slices.Concat(s.Before, s.Threads[0])}
			} else {
				require.Empty(t, s.Before, "Before with threads")
			}
			checkGot(t, lines, threads, tids, Stubs(lines))
		})
	}
}

// expand lists the calls the recorder sees for c, in order.
func expand(c Call) []Call {
	if !c.ViaStub {
		return []Call{c}
	}
	push := c
	push.API, push.Func = "__cudaPushCallConfiguration", ""
	return []Call{push, {API: "__cudaPopCallConfiguration"}, c}
}

type got struct {
	api string
	kv  map[string]string
}

func parseGot(lines []string) map[int][]got {
	out := map[int][]got{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] != "GOT" {
			continue
		}
		g := got{api: f[1], kv: map[string]string{}}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			g.kv[k] = v
		}
		tid, _ := strconv.Atoi(g.kv["tid"])
		out[tid] = append(out[tid], g)
	}
	return out
}

func checkGot(t *testing.T, lines []string, threads [][]Call, tids map[int]int, stubs map[string]uint64) {
	t.Helper()
	byTid := parseGot(lines)
	assert.Len(t, byTid, len(threads), "GOT lines from %d threads %v, want %d", len(byTid), slices.Collect(maps.Keys(byTid)), len(threads))
	for i, seq := range threads {
		var want []Call
		for _, c := range seq {
			want = append(want, expand(c)...)
		}
		gots := byTid[tids[i]]
		assert.Len(t, gots, len(want), "thread %d: %d calls recorded, want %d", i, len(gots), len(want))
		for j := range min(len(gots), len(want)) {
			assert.NoError(t, match(gots[j], want[j], stubs), "thread %d call %d", i, j)
		}
	}
}

// match compares one recorded call with the table's.
func match(g got, c Call, stubs map[string]uint64) error {
	if g.api != c.API {
		return fmt.Errorf("called %s, want %s", g.api, c.API)
	}
	hex := func(v uint64) string { return fmt.Sprintf("0x%x", v) }
	dim := func(d Dim3) string { return fmt.Sprintf("%d,%d,%d", d[0], d[1], d[2]) }
	for k, v := range g.kv {
		var want string
		switch k {
		case "tid":
			continue
		case "func":
			want = hex(stubs[c.Func])
		case "name", "devname":
			want = c.Func
		case "handle":
			if strings.HasPrefix(c.API, "__cuda") {
				continue // the fatbin handle
			}
			want = hex(c.Handle)
		case "magic":
			want = "0x466243b1"
		case "grid":
			want = dim(c.Grid)
		case "block":
			want = dim(c.Block)
		case "smem":
			want = strconv.Itoa(int(c.SharedMem))
		case "stream":
			want = hex(c.Stream)
		case "kind":
			want = strconv.Itoa(int(c.Kind))
		case "size":
			want = strconv.FormatUint(c.Size, 10)
		case "dst", "src":
			p := c.Dst
			if k == "src" {
				p = c.Src
			}
			if p == 0 { // a host buffer
				if v == "0x0" {
					return fmt.Errorf("%s: %s is NULL, want a host buffer", c.API, k)
				}
				continue
			}
			want = hex(p)
		case "ptr":
			want = hex(c.Ptr)
		case "out":
			want = hex(c.Out)
		case "child":
			want = hex(c.Child)
		case "function":
			want = hex(c.Function)
		case "node":
			want = hex(c.Node)
		case "graph":
			want = hex(c.Graph)
		case "type":
			want = strconv.Itoa(c.NodeType)
		case "value":
			want = strconv.Itoa(c.Value)
		default:
			return fmt.Errorf("%s: unexpected key %s", c.API, k)
		}
		if v != want {
			return fmt.Errorf("%s: %s=%s, want %s", c.API, k, v, want)
		}
	}
	return nil
}

// TestLoop runs each program's loops on one thread and on three: the
// setup calls are made once, and every thread makes the n calls.
func TestLoop(t *testing.T) {
	realGPU(t)
	for _, l := range Loops {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%s/%d", l.Program, l.Name, threads), func(t *testing.T) {
				t.Parallel()
				lines := run(t, exec.Command(Build(t, l.Program), l.Name, "1000", strconv.Itoa(threads)))
				ns, ok := NsPerCall(lines)
				assert.True(t, ok, "NS_PER_CALL %v %v in %q", ns, ok, lines)
				assert.Positive(t, ns, "NS_PER_CALL %v %v in %q", ns, ok, lines)
				want := Scenario{Threads: [][]Call{l.Setup}}.Rets()
				if want[l.Call.API] == nil {
					want[l.Call.API] = map[int]int{}
				}
				want[l.Call.API][l.Call.Ret] += 1000 * threads
				assert.Equal(t, want, Rets(lines), "RET lines")
			})
		}
	}
}

// TestLoopArguments checks, without a tracer, that the loops pass
// exactly the arguments the tables list, their setup's first.
func TestLoopArguments(t *testing.T) {
	for _, l := range Loops {
		if l.Program == "static" {
			continue // its own cudaLaunchKernel: TestScenarioArguments checks it
		}
		t.Run(l.Program+"/"+l.Name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(Build(t, l.Program), l.Name, "3")
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+Build(t, "recorder"))
			p := StartCmd(t, cmd)
			p.Go()
			lines := p.Wait()
			// The setup runs on the main thread, the loop on one of its own.
			loopTid := 0
			for tid := range parseGot(lines) {
				if tid != p.Pid {
					loopTid = tid
				}
			}
			threads, tids := [][]Call{{l.Call, l.Call, l.Call}}, map[int]int{0: loopTid}
			if len(l.Setup) > 0 {
				threads, tids = append(threads, l.Setup), map[int]int{0: loopTid, 1: p.Pid}
			}
			checkGot(t, lines, threads, tids, Stubs(lines))
		})
	}
}

func mapped(t *testing.T, pid int, path string) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	require.NoError(t, err)
	return strings.Contains(string(b), path)
}

// TestDlopenRealCudart loads a copy of the real runtime from a
// pip-wheel-like path.
func TestDlopenRealCudart(t *testing.T) {
	realGPU(t)
	exe := Build(t, "dlopen")
	lib := CopyLib(t, RealCudart(t), "site-packages/nvidia/cuda_runtime/lib/libcudart.so.12")
	p := Start(t, exe, lib, "pause")
	require.False(t, mapped(t, p.Pid, lib), "library mapped before the go line")
	p.Go()
	p.WaitLine("LOADED ")
	require.True(t, mapped(t, p.Pid, lib), "%s not in /proc/%d/maps after LOADED", lib, p.Pid)
	p.Go()
	p.WaitLine("CALLED")
	p.Go()
	lines := p.Wait()
	want := map[string]map[int]int{"cudaLaunchKernel": {DlopenLaunch.Ret: 1}}
	assert.Equal(t, want, Rets(lines), "RET lines")
	assert.NotZero(t, Stubs(lines)[DlopenLaunch.Func], "no STUB line for %s in %q", DlopenLaunch.Func, lines)
}

// TestLateStarters: late and linked make their n launches through the
// real runtime, late after loading it from a path of its own.
func TestLateStarters(t *testing.T) {
	realGPU(t)
	lib := CopyLib(t, RealCudart(t), "site-packages/nvidia/cuda_runtime/lib/libcudart.so.12")
	want := map[string]map[int]int{"cudaLaunchKernel": {DlopenLaunch.Ret: 5}}

	p := Start(t, Build(t, "late"), lib, "5", "1000")
	require.False(t, mapped(t, p.Pid, lib), "library mapped before the go line")
	p.Go()
	assert.Equal(t, want, Rets(p.Wait()), "late: RET lines")

	p = Start(t, Build(t, "linked"), "5", "0")
	require.True(t, mapped(t, p.Pid, RealCudart(t)), "linked: the runtime is not mapped at READY")
	p.Go()
	assert.Equal(t, want, Rets(p.Wait()), "linked: RET lines")
}

// TestShort: the short program exits at once, with status 0.
func TestShort(t *testing.T) {
	realGPU(t)
	out, err := exec.Command(Build(t, "short")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, out)
}

// TestForward checks that the forward library passes the launch on to
// the real libcuda's cuLaunchKernel.
func TestForward(t *testing.T) {
	realGPU(t)
	exe := Build(t, "dlopen")
	fwd := Build(t, "forward")
	libcuda := RealLibcuda(t)

	p := Start(t, exe, fwd)
	p.Go()
	p.WaitLine("CALLED")
	assert.True(t, mapped(t, p.Pid, libcuda), "%s not mapped", libcuda)
	p.Go()
	want := map[string]map[int]int{"cudaLaunchKernel": {ForwardLaunch.Ret: 1}}
	assert.Equal(t, want, Rets(p.Wait()), "RET lines")

	// With the recorder preloaded, the forwarded call's arguments.
	cmd := exec.Command(exe, fwd)
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+Build(t, "recorder"))
	p = StartCmd(t, cmd)
	p.Go()
	p.WaitLine("CALLED")
	p.Go()
	lines := p.Wait()
	checkGot(t, lines, [][]Call{{{API: "cuInit"}, ForwardLaunch}}, map[int]int{0: p.Pid}, nil)
}

// TestSymbols checks where the kernel stubs and cudaLaunchKernel are: in
// .symtab, not .dynsym (no -rdynamic), as a tracer will find them in an
// unstripped nvcc-built or statically linked application.
func TestSymbols(t *testing.T) {
	for prog, want := range map[string][]string{
		"runtime":    {KernelVectorAdd, KernelMatmul, KernelReduce},
		"static":     {KernelVectorAdd, KernelMatmul, KernelReduce, "cudaLaunchKernel"},
		"dlopen":     {KernelSaxpy},
		"late":       {KernelSaxpy},
		"linked":     {KernelSaxpy},
		"staticlate": {KernelSaxpy, "cudaLaunchKernel"},
		"short":      ShortKernels,
	} {
		f, err := elf.Open(Build(t, prog))
		require.NoError(t, err)
		syms, err := f.Symbols()
		require.NoError(t, err)
		dyn, _ := f.DynamicSymbols()
		f.Close()
		for _, name := range want {
			i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == name })
			if assert.GreaterOrEqual(t, i, 0, "%s: %s is not a defined global function in .symtab", prog, name) {
				assert.Equal(t, elf.STT_FUNC, elf.ST_TYPE(syms[i].Info), "%s: %s is not a defined global function in .symtab", prog, name)
				assert.Equal(t, elf.STB_GLOBAL, elf.ST_BIND(syms[i].Info), "%s: %s is not a defined global function in .symtab", prog, name)
				assert.NotZero(t, syms[i].Value, "%s: %s is not a defined global function in .symtab", prog, name)
			}
			assert.False(t, slices.ContainsFunc(dyn, func(s elf.Symbol) bool { return s.Name == name && s.Value != 0 }),
				"%s: %s is exported in .dynsym", prog, name)
		}
	}
}

// TestLibraryExports checks that the real libraries export every entry
// point the programs call.
func TestLibraryExports(t *testing.T) {
	for _, l := range []struct {
		path string
		prog string
	}{{RealCudart(t), "runtime"}, {RealLibcuda(t), "driver"}} {
		f, err := elf.Open(l.path)
		require.NoError(t, err)
		dyn, err := f.DynamicSymbols()
		f.Close()
		require.NoError(t, err)
		have := map[string]bool{}
		for _, s := range dyn {
			if s.Value != 0 && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				have[s.Name] = true
			}
		}
		for _, s := range Scenarios {
			if s.Program != l.prog {
				continue
			}
			for api := range s.Counts() {
				assert.True(t, have[api], "%s does not export %s", l.path, api)
			}
		}
	}
}

// TestLinger: a program with the linger library preloaded stays alive
// after DONE until Wait closes its stdin, and then exits cleanly.
func TestLinger(t *testing.T) {
	cmd := exec.Command(Build(t, "static"), "launch")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+Build(t, "linger"))
	p := StartCmd(t, cmd)
	p.Go()
	for deadline := time.Now().Add(DefaultTimeout); !slices.Contains(p.Lines(), "DONE"); time.Sleep(10 * time.Millisecond) {
		require.False(t, time.Now().After(deadline), "no DONE: %q", p.Lines())
	}
	select {
	case <-p.exited:
		require.Fail(t, "exited before its stdin was closed", "exit: %v", p.err)
	case <-time.After(200 * time.Millisecond):
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(p.Pid))
	require.NoError(t, err, "lingering, yet its /proc entry is gone")
	p.Wait()
}
