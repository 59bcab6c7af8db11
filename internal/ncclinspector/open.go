package ncclinspector

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/procfs"
)

// MaxDirEntries bounds the entries of a dump directory looked through
// for a process's file: a shared one holds a file per process of the job
// on the node.
const MaxDirEntries = 4096

// ErrNoDump is what OpenDump returns while the process has no dump (the
// Inspector writes it at its first dump: at the first interval, or when
// a communicator ends).
var ErrNoDump = errors.New("no NCCL Inspector dump")

// MaxDumps bounds the dumps of one process OpenDumps opens.
const MaxDumps = 4

// OpenDumps opens the JSON dumps of process p: the files <hostname>-pid<nspid>.log in dir, an
// absolute dir in the process's root, a relative one in its working
// directory (nspid is the process's id in its own PID namespace, as
// getpid() gave the Inspector). Its host name is not known here, so every
// file of that pid is, up to MaxDumps of them: in a directory shared by
// several nodes' pods, another's process can have the same pid, and the
// caller tells its records apart (they are another rank's). The lookup
// never leaves the process's root, or its working directory for a
// relative dir (procfs's Proc.Open), and follows no symbolic link to a
// file; each must be a regular one (procfs.OpenIn). It returns the files and their paths as the process sees
// them, or an error wrapping ErrNoDump when there is none (yet).
func OpenDumps(p procfs.Proc, dir string, nspid int) ([]*os.File, error) {
	d, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("ncclinspector: %w: no directory %s", ErrNoDump, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("ncclinspector: the dump directory: %w", err)
	}
	defer d.Close()
	suffix := "-pid" + strconv.Itoa(nspid) + ".log"
	var names []string
	for seen := 0; len(names) < MaxDumps && seen < MaxDirEntries; {
		batch, err := d.Readdirnames(256)
		seen += len(batch)
		for _, n := range batch {
			if strings.HasSuffix(n, suffix) && len(n) > len(suffix) && len(names) < MaxDumps {
				names = append(names, n)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ncclinspector: list %s: %w", dir, err)
		}
	}
	var files []*os.File
	var errs []error
	for _, name := range names {
		f, err := procfs.OpenIn(d, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("ncclinspector: %w", err))
			continue
		}
		files = append(files, f)
	}
	if len(files) > 0 {
		return files, nil
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("ncclinspector: %w: no *%s in %s", ErrNoDump, suffix, dir)
}
