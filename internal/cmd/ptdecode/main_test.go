package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpuscope/xpuscope/intelpt"
	"github.com/xpuscope/xpuscope/internal/libipt"
	"github.com/xpuscope/xpuscope/internal/testutil"
)

// TestDecodeCapture: a capture directory in intelpt's format, whose trace
// is a synthetic stream libipt's own encoder wrote, decodes back to its
// packets, and its sideband to its records. Runs where libipt is
// installed (make test installs it).
func TestDecodeCapture(t *testing.T) {
	l, err := libipt.Open(libipt.DefaultLibrary)
	if err != nil {
		testutil.SkipOrFail(t, "libipt (Debian package libipt2) is not installed; run make test: %v", err)
	}
	trace, err := l.Encode(libipt.Synthetic(), 4096)
	require.NoError(t, err)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, intelpt.TraceFile), trace, 0o600))
	comm := make([]byte, 8+8+16+32)
	binary.NativeEndian.PutUint32(comm, 3)
	binary.NativeEndian.PutUint16(comm[6:], uint16(len(comm)))
	aux := make([]byte, 8+24+32)
	binary.NativeEndian.PutUint32(aux, 11)
	binary.NativeEndian.PutUint16(aux[6:], uint16(len(aux)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, intelpt.SidebandFile), append(comm, aux...), 0o600))
	m, err := json.Marshal(intelpt.Manifest{Format: intelpt.ManifestFormat, PID: 4242, CPU: -1, Config: "0x300e601",
		Vendor: "GenuineIntel", Family: 6, Model: 106, Stepping: 6, Stop: "duration", Complete: true, TraceBytes: int64(len(trace))})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, intelpt.ManifestFile), m, 0o600))

	var out, errs bytes.Buffer
	require.Equal(t, 0, run([]string{dir}, &out, &errs), errs.String())
	assert.Contains(t, out.String(), "pid 4242, config 0x300e601")
	assert.Contains(t, out.String(), "packets from offset 0: pad 1, psb 1, psbend 1, tip 1, tip.pge 1, tip.pgd 1, tnt.8 1, tsc 1")
	assert.Contains(t, out.String(), "sideband: aux 1, comm 1")

	out.Reset()
	require.Equal(t, 0, run([]string{"-dump", dir}, &out, &errs), errs.String())
	assert.Contains(t, out.String(), "tsc 0x1234567890")
	assert.Contains(t, out.String(), "tip.pge ipc 3 0x401000")
	assert.Contains(t, out.String(), "tnt.8 2 bits 10")

	assert.Equal(t, 1, run([]string{t.TempDir()}, &out, &errs), "not a capture directory")
	assert.Equal(t, 2, run(nil, &out, &errs))
}
