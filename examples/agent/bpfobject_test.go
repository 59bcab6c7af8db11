package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/internal/testutil"
)

// cudaObject is the BPF object bpf2go embeds in the CUDA and HIP tracers.
const cudaObject = "../../internal/gputracebpf/gputrace_x86_bpfel.o"

// buildWithObject builds the agent as users do, with the embedded CUDA BPF
// object replaced by obj through go build's -overlay: the binary is the
// real agent, its object is not.
func buildWithObject(t *testing.T, obj []byte) string {
	t.Helper()
	dir := t.TempDir()
	bad := filepath.Join(dir, "cuda.o")
	require.NoError(t, os.WriteFile(bad, obj, 0o644))
	orig, err := filepath.Abs(cudaObject)
	require.NoError(t, err)
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {orig: bad}})
	require.NoError(t, err)
	overlayPath := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlayPath, overlay, 0o644))
	exe := filepath.Join(dir, "agent")
	out, err := exec.Command("go", "build", "-overlay", overlayPath, "-o", exe, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return exe
}

// rejectedInstruction returns obj with the first instruction of its
// program sync_enter, which both the CUDA and the HIP tracer load, given
// an opcode that no BPF instruction has: the object still parses, and the
// kernel's verifier rejects the program.
func rejectedInstruction(t *testing.T, obj []byte) []byte {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(obj))
	require.NoError(t, err)
	syms, err := f.Symbols()
	require.NoError(t, err)
	for _, sym := range syms {
		if sym.Name == "sync_enter" && elf.ST_TYPE(sym.Info) == elf.STT_FUNC && int(sym.Section) < len(f.Sections) {
			out := append([]byte(nil), obj...)
			out[f.Sections[sym.Section].Offset+sym.Value] = 0xf7 // ALU64, operation 0xf0: undefined
			return out
		}
	}
	require.Fail(t, "the CUDA object has no program sync_enter")
	return nil
}

// A BPF object that is corrupt, or that the verifier rejects, is a fault:
// the agent says which feature and why, and exits non-zero, in -check and
// in a run alike. The other features are unaffected.
func TestCorruptBPFObjectIsAFault(t *testing.T) {
	testutil.Native(t, "the kernel's BPF and uprobes")
	if os.Geteuid() != 0 {
		testutil.SkipOrFail(t, "loading BPF objects needs root (CAP_BPF and CAP_PERFMON)")
	}
	obj, err := os.ReadFile(cudaObject)
	require.NoError(t, err)
	garbage := append([]byte(nil), obj...)
	for i := len(garbage) / 2; i < len(garbage)/2+64; i++ {
		garbage[i] ^= 0xff
	}
	for _, tc := range []struct {
		name   string
		obj    []byte
		reason string
	}{
		{"bytes overwritten", garbage, `gputracebpf: parse embedded object: `},
		{"an instruction the verifier rejects", rejectedInstruction(t, obj), `load BPF object: program \w+: load program: invalid argument: unknown opcode f7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe := buildWithObject(t, tc.obj)

			stdout, stderr, code := output(t, exec.Command(exe, "-check"))
			assert.Equal(t, 1, code, "-check exit status; stderr: %s", stderr)
			for _, feature := range []string{"cudatrace", "hiptrace"} {
				assert.Regexp(t, `(?m)^`+feature+` +fault +`+feature+`: .*`, stdout)
				assert.Regexp(t, `(?m)^`+feature+` +fault +.*`+tc.reason, stdout)
			}
			assert.Regexp(t, `(?m)^genai +active +`, stdout, "a feature with a sound object still starts")

			_, stderr, code = output(t, exec.Command(exe, "-duration", "30s", "-listen", ""))
			assert.Equal(t, 1, code, "a run stops at once with a fault; stderr: %s", stderr)
			assert.Regexp(t, `level=ERROR msg="feature fault" feature=cudatrace err=`, stderr)
		})
	}
}
