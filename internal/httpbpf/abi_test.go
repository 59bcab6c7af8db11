package httpbpf

import (
	"bufio"
	"crypto/tls"
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/xpuscope/xpuscope/internal/testutil/bpfregs"
	"github.com/xpuscope/xpuscope/internal/testutil/cabi"
)

// The calling-convention test of the capture's probes, as
// gputracebpf's: OpenSSL's functions by a caller compiled with each
// architecture's gcc, Go's crypto/tls by the Go compiler's own assembly
// (go build -gcflags=-S) of testdata/goabi for each GOARCH; each probe's
// program must read every register its arguments are in. The arm64
// object cannot be loaded on this x86-64 kernel: this is its check.

// sslHeader has the prototypes of the OpenSSL functions TLSProbes
// probes (OpenSSL 3's ssl.h; ssl_local.h for the internal two).
const sslHeader = `
#include <stddef.h>
typedef struct ssl_st SSL;
int SSL_write(SSL *ssl, const void *buf, int num);
int SSL_read(SSL *ssl, void *buf, int num);
int SSL_write_ex(SSL *s, const void *buf, size_t num, size_t *written);
int SSL_read_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes);
int ssl_write_internal(SSL *s, const void *buf, size_t num, size_t *written);
int ssl_read_internal(SSL *s, void *buf, size_t num, size_t *readbytes);
void SSL_free(SSL *ssl);
`

// tlsRecords are the arguments (0-based) each TLS probe's entry program
// keeps: the connection, the buffer and, for the _ex forms and the
// internal functions, where the count goes.
func tlsRecords(p TLSProbe) []int {
	switch {
	case p.Entry == captureProgTlsFree:
		return []int{0}
	case p.Symbol == "SSL_write" || p.Symbol == "SSL_read":
		return []int{0, 1}
	}
	return []int{0, 1, 3}
}

type captureArch struct {
	abi    cabi.Arch
	goarch string
	object string
	regs   map[string]string // the probe context's registers: cabi's names, their offsets in C
}

var captureArchs = []captureArch{
	{cabi.AMD64, "amd64", "capture_x86_bpfel.o", map[string]string{
		"rdi": "offsetof(struct pt_regs, rdi)", "rsi": "offsetof(struct pt_regs, rsi)",
		"rdx": "offsetof(struct pt_regs, rdx)", "rcx": "offsetof(struct pt_regs, rcx)",
		"r8": "offsetof(struct pt_regs, r8)", "r9": "offsetof(struct pt_regs, r9)",
		"sp": "offsetof(struct pt_regs, rsp)", "ret": "offsetof(struct pt_regs, rax)",
		"rax": "offsetof(struct pt_regs, rax)", "rbx": "offsetof(struct pt_regs, rbx)",
		"r14": "offsetof(struct pt_regs, r14)",
	}},
	{cabi.ARM64, "arm64", "capture_arm64_bpfel.o", map[string]string{
		"x0": "offsetof(struct user_pt_regs, regs[0])", "x1": "offsetof(struct user_pt_regs, regs[1])",
		"x2": "offsetof(struct user_pt_regs, regs[2])", "x3": "offsetof(struct user_pt_regs, regs[3])",
		"x4": "offsetof(struct user_pt_regs, regs[4])", "x5": "offsetof(struct user_pt_regs, regs[5])",
		"x6": "offsetof(struct user_pt_regs, regs[6])", "x7": "offsetof(struct user_pt_regs, regs[7])",
		"sp": "offsetof(struct user_pt_regs, sp)", "ret": "offsetof(struct user_pt_regs, regs[0])",
		"x28": "offsetof(struct user_pt_regs, regs[28])",
	}},
}

func TestCallingConvention(t *testing.T) {
	protos := cabi.Prototypes(sslHeader)
	for _, p := range TLSProbes {
		require.Contains(t, protos, p.Symbol)
	}
	for _, a := range captureArchs {
		t.Run(a.goarch, func(t *testing.T) {
			locs, ctx := cabi.Layouts(t, a.abi, sslHeader, protos, a.regs)
			spec, err := ebpf.LoadCollectionSpec(a.object)
			require.NoError(t, err)
			analyze := func(prog string) bpfregs.Reads {
				ps := spec.Programs[prog]
				require.NotNil(t, ps, "%s: no program %s", a.object, prog)
				r, err := bpfregs.Analyze(ps.Instructions)
				require.NoError(t, err, prog)
				return r
			}
			for _, p := range TLSProbes {
				r := analyze(p.Entry)
				for _, i := range tlsRecords(p) {
					for _, loc := range locs[p.Symbol][i].Words {
						_, ok := r.Ctx[ctx[loc]]
						assert.True(t, ok, "%s %s: %s keeps argument %d, in %s: it reads %v", a.goarch, p.Symbol, p.Entry, i, loc, r.Ctx)
					}
				}
				assert.Empty(t, r.User[ctx["sp"]], "%s %s: nothing is passed on the stack", a.goarch, p.Symbol)
				if p.Return != "" {
					_, ok := analyze(p.Return).Ctx[ctx["ret"]]
					assert.True(t, ok, "%s %s: %s reads no return register", a.goarch, p.Symbol, p.Return)
				}
			}

			// Go's crypto/tls: every register the Go compiler passes
			// what go_tls records in, and g.
			g := goABI(t, a.goarch)
			t.Logf("%s: Go's registers %+v", a.goarch, g)
			want := map[string]string{
				"(*Conn).Write's receiver": g.calls["crypto/tls.(*Conn).Write"][0x1111],
				"(*Conn).Write's buffer":   g.calls["crypto/tls.(*Conn).Write"][0x2211],
				"(*Conn).Write's length":   g.calls["crypto/tls.(*Conn).Write"][0x3311],
				"(*Conn).Read's receiver":  g.calls["crypto/tls.(*Conn).Read"][0x1111],
				"(*Conn).Read's buffer":    g.calls["crypto/tls.(*Conn).Read"][0x2211],
				"(*Conn).Close's receiver": g.calls["crypto/tls.(*Conn).Close"][0x1111],
				"runtime.memmove's source": g.calls["runtime.memmove"][0x5511],
				"runtime.memmove's count":  g.calls["runtime.memmove"][0x6611],
				"a Read's count returned":  g.ret[0x7711],
				"g":                        g.g,
			}
			r := analyze(captureProgGoTls)
			for what, reg := range want {
				require.NotEmpty(t, reg, "%s: %s: where? (the Go compiler's output gave %+v)", a.goarch, what, g)
				off, ok := ctx[reg]
				require.True(t, ok, "%s: %s in %s, whose offset the test lacks", a.goarch, what, reg)
				_, ok = r.Ctx[off]
				assert.True(t, ok, "%s: go_tls reads %s in %s (offset %d)? it reads %v", a.goarch, what, reg, off, r.Ctx)
			}
		})
	}
}

// TestGoConnLayout: where go_conn_fd looks for a Go crypto/tls
// connection's descriptor (capture.bpf.c's GO_ITAB_HASH and GO_SYSFD),
// and the type hash it takes for *net.TCPConn's (goTypeHashes), are those
// of the Go the test is built with, as its own types and itab have them:
// tls.Conn begins with its net.Conn; a *net.TCPConn's data begins with
// its *netFD, whose poll.FD begins it; and the itab of a *net.TCPConn as
// a net.Conn holds the hash.
func TestGoConnLayout(t *testing.T) {
	src, err := os.ReadFile("capture.bpf.c")
	require.NoError(t, err)
	define := func(name string) uintptr {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindSubmatch(src)
		require.NotNil(t, m, "no #define %s in capture.bpf.c", name)
		n, err := strconv.Atoi(string(m[1]))
		require.NoError(t, err)
		return uintptr(n)
	}
	first := func(typ reflect.Type, name string) reflect.StructField {
		f := typ.Field(0)
		require.Equal(t, name, f.Name, "%v's first field", typ)
		require.Zero(t, f.Offset, "%v's first field", typ)
		return f
	}
	require.Equal(t, reflect.TypeFor[net.Conn](), first(reflect.TypeFor[tls.Conn](), "conn").Type, "tls.Conn's conn")
	netFD := first(first(reflect.TypeFor[net.TCPConn](), "conn").Type, "fd").Type.Elem()
	sysfd, ok := first(netFD, "pfd").Type.FieldByName("Sysfd")
	require.True(t, ok, "poll.FD has no Sysfd")
	assert.Equal(t, define("GO_SYSFD"), sysfd.Offset, "poll.FD's Sysfd")

	var c net.Conn = &net.TCPConn{}
	itab := (*[2]unsafe.Pointer)(unsafe.Pointer(&c))[0]
	hash := *(*uint32)(unsafe.Add(itab, define("GO_ITAB_HASH")))
	assert.Equal(t, goTypeHashes("*net.TCPConn")[0], hash, "the hash in the itab of a *net.TCPConn as a net.Conn")
}

// goRegs are where the Go compiler put testdata/goabi's markers: at each
// call, by callee and marker, the register (as a struct pt_regs field's
// name: "rax", "x0"); at count's return; and g's register.
type goRegs struct {
	calls map[string]map[uint64]string
	ret   map[uint64]string
	g     string
}

var (
	goFuncRE = regexp.MustCompile(`^(\S+) STEXT`)
	goInsnRE = regexp.MustCompile(`^\s+0x[0-9a-f]+ \d+ \(.*\)\t(\S+)\t?(.*)$`)
)

// goRegName turns a Go assembler register name into the struct pt_regs
// field's: AX is rax, R8 r8 on amd64; Rn is xn on arm64.
func goRegName(goarch, r string) string {
	if goarch == "arm64" {
		if n, ok := strings.CutPrefix(r, "R"); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return "x" + n
			}
		}
		return ""
	}
	switch r {
	case "AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP":
		return "r" + strings.ToLower(r)
	}
	return strings.ToLower(r) // R8 … R15
}

// goABI builds testdata/goabi for goarch with the Go compiler's assembly
// listing and reads it; g's register comes from the binary's machine
// code, the first instruction of a function (its stack check's load of
// the stack guard from g).
func goABI(t *testing.T, goarch string) goRegs {
	t.Helper()
	mod := t.TempDir()
	src, err := os.ReadFile("testdata/goabi/main.go")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "main.go"), src, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module goabi\n\ngo 1.24\n"), 0o644))
	exe := filepath.Join(mod, "goabi")
	cmd := exec.Command("go", "build", "-gcflags=-S", "-o", exe, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOARCH="+goarch, "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	g := goRegs{calls: map[string]map[uint64]string{}, ret: map[uint64]string{}}
	regs := map[string]uint64{}
	fn := ""
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if m := goFuncRE.FindStringSubmatch(line); m != nil {
			fn, regs = m[1], map[string]uint64{}
			continue
		}
		m := goInsnRE.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(fn, "main.") {
			continue
		}
		op, args := m[1], strings.Split(m[2], ", ")
		switch {
		case (op == "MOVD" || op == "MOVL" || op == "MOVQ") && len(args) == 2 && strings.HasPrefix(args[0], "$"):
			v, err := strconv.ParseUint(args[0][1:], 0, 64)
			if err == nil {
				regs[goRegName(goarch, args[1])] = v
			}
		case op == "CALL":
			callee := strings.TrimSuffix(args[0], "(SB)")
			if g.calls[callee] == nil {
				g.calls[callee] = map[uint64]string{}
			}
			for r, v := range regs {
				g.calls[callee][v] = r
			}
		case op == "RET" && fn == "main.count":
			for r, v := range regs {
				g.ret[v] = r
			}
		}
	}

	// g: the base register of the first instruction of main.callWrite.
	ef, err := elf.Open(exe)
	require.NoError(t, err)
	defer ef.Close()
	syms, err := ef.Symbols()
	require.NoError(t, err)
	text := ef.Section(".text")
	data, err := text.Data()
	require.NoError(t, err)
	for _, s := range syms {
		if s.Name != "main.callWrite" {
			continue
		}
		code := data[s.Value-text.Addr:]
		if goarch == "arm64" {
			in, err := arm64asm.Decode(code)
			require.NoError(t, err)
			mem, ok := in.Args[1].(arm64asm.MemImmediate)
			require.True(t, ok && in.Op == arm64asm.LDR, "the stack check's load: %v", in)
			g.g = strings.ToLower(fmt.Sprint(arm64asm.Reg(mem.Base)))
		} else {
			in, err := x86asm.Decode(code, 64)
			require.NoError(t, err)
			mem, ok := in.Args[1].(x86asm.Mem)
			require.True(t, ok && in.Op == x86asm.CMP, "the stack check's compare: %v", in)
			g.g = strings.ToLower(mem.Base.String())
		}
	}
	return g
}
