package config

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadSoon is Load(path), failed if it has not returned within a minute:
// a FIFO with no writer would make a plain open wait forever.
func loadSoon(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Load(path, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		require.FailNow(t, "Load blocked", "on %s", path)
		return nil
	}
}

// Anything but a regular file is refused at once, saying what it is: a
// FIFO with no writer (which a plain open waits on forever), a FIFO with
// a writer, a character device, a socket, a directory; a symlink to a
// regular file is read.
func TestLoadRefusesWhatIsNoRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	for path, kind := range map[string]string{
		fifo:        "a FIFO",
		os.DevNull:  "a character device",
		sock:        "a socket",
		dir:         "a directory",
		"/dev/zero": "a character device",
	} {
		err := loadSoon(t, path)
		require.Error(t, err, path)
		assert.ErrorIs(t, err, errNotRegular, path)
		assert.Equal(t, "read configuration "+path+": "+kind+", not a regular file", err.Error())
	}

	// A FIFO that a writer holds open (O_RDWR opens one at once on
	// Linux), with bytes in it: still refused.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	defer w.Close()
	_, err = w.WriteString("log_level: warn\n")
	require.NoError(t, err)
	assert.ErrorIs(t, loadSoon(t, fifo), errNotRegular)

	file := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(file, []byte("log_level: warn\n"), 0o600))
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(file, link))
	assert.NoError(t, loadSoon(t, link))
}

// The price file is held to the same rule.
func TestPriceFileRefusesWhatIsNoRegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "prices")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err := LLM{PriceFile: fifo}.Rates()
	assert.ErrorIs(t, err, errNotRegular)
	assert.Equal(t, "aiml.llm.price_file "+fifo+": a FIFO, not a regular file", err.Error())
}
