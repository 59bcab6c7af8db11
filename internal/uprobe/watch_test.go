package uprobe

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeWatch(t *testing.T) {
	record := func(pid, what uint32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, pid)
		return binary.LittleEndian.AppendUint32(b, what)
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		pid  int
		exec bool
	}{
		{"exec", record(4242, uint32(watchWatchWhatWATCH_EXEC)), 4242, true},
		{"loader", record(7, uint32(watchWatchWhatWATCH_LOAD)), 7, false},
		{"longer", append(record(9, uint32(watchWatchWhatWATCH_EXEC)), 0, 0), 9, true},
	} {
		pid, exec, err := decodeWatch(tc.raw)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.pid, pid, tc.name)
		assert.Equal(t, tc.exec, exec, tc.name)
	}
	_, _, err := decodeWatch(make([]byte, 7))
	assert.Error(t, err, "a short record")
}

func FuzzDecodeWatch(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		pid, _, err := decodeWatch(raw)
		if err == nil {
			assert.Equal(t, int(binary.LittleEndian.Uint32(raw)), pid)
		}
	})
}
