package training

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/linetail"
	"github.com/xpuscope/xpuscope/internal/procfs"
	"github.com/xpuscope/xpuscope/internal/tfevents"
	"github.com/xpuscope/xpuscope/semconv"
)

// readBuf is the buffer every file is read through, one after the other:
// the longest TensorBoard record read (longer ones are images, graphs or
// histograms, never a scalar) and the longest MLflow or CSV line.
const readBuf = 64 << 10

// run is one directory a job writes figures to, in one format: a
// TensorBoard log directory, an MLflow run, a CSVLogger version
// directory. Its files' figures are one series.
type run struct {
	key        runKey
	name       string // training.run: the directory's last component
	s          series
	attrs      attribute.Set // of its series, made at publish
	attrOK     bool
	throughput [3]attribute.Set // attrs with each throughput item
	scalarSets map[string]attribute.Set
	used       bool // a file of it is read
}

type runKey struct {
	format string
	dir    string // as the job names it
}

// fileID identifies a file: its device and inode.
type fileID struct{ dev, ino uint64 }

// logFile is one file a job writes that the Source reads.
type logFile struct {
	id     fileID
	path   string // as the job names it
	format string
	f      *os.File
	dir    *watchedDir // the directory it was found in, or is in; nil when it could not be opened
	name   string      // its entry in dir
	run    *run

	tb      *tfevents.Reader
	onRec   func([]byte)
	onLine  func([]byte)
	lines   *linetail.Tail
	scalars func(tfevents.Event, tfevents.Scalar)

	// CSV: the header line as read, its columns, and where the step is.
	header  []byte
	columns [][]byte
	stepCol int

	// MLflow: the metric's key, its path under the run's metrics/.
	key []byte

	records    int64
	pending    bool // a TensorBoard record's end awaited
	lastGrowth time.Time
	size       int64
	problem    string
}

// offset is where the next read of the file starts.
func (lf *logFile) offset() int64 {
	if lf.tb != nil {
		return lf.tb.Offset()
	}
	return lf.lines.Offset()
}

func (lf *logFile) close() {
	if lf.f != nil {
		lf.f.Close()
		lf.f = nil
	}
}

// idOf returns a file's identity.
func idOf(f *os.File) (fileID, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return fileID{}, 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, 0, errors.New("no stat_t")
	}
	return fileID{uint64(sys.Dev), sys.Ino}, st.Size(), nil
}

// newLogFile makes the reader of an opened file; the file is the
// logFile's from then on.
func (s *Source) newLogFile(j *job, f *os.File, id fileID, path, format string, dir *watchedDir, name string, now time.Time) *logFile {
	lf := &logFile{id: id, path: path, format: format, f: f, dir: dir, name: name, stepCol: -1, lastGrowth: now}
	runDir := filepath.Dir(path)
	switch format {
	case semconv.TrainingLogTensorBoard:
		lf.tb = tfevents.NewReader(f, 0)
		lf.scalars = func(ev tfevents.Event, sc tfevents.Scalar) {
			lf.run.s.observe(sc.Tag, sc.Value, ev.Step, true, ev.WallTime, &j.tags)
		}
		lf.onRec = func(rec []byte) {
			lf.records++
			if _, err := tfevents.DecodeEvent(rec, lf.scalars); err != nil {
				s.countError(format, semconv.TrainingErrorDecode, 1)
			}
		}
	case semconv.TrainingLogMLflow:
		lf.lines = linetail.New(f, 0, s.buf)
		runDir = dir.run
		rel, err := filepath.Rel(filepath.Join(dir.run, "metrics"), path)
		if err != nil {
			rel = filepath.Base(path)
		}
		lf.key = []byte(filepath.ToSlash(rel))
		lf.onLine = func(line []byte) {
			ts, v, step, ok := parseMLflowLine(line)
			if !ok {
				s.countError(format, semconv.TrainingErrorParse, 1)
				return
			}
			lf.records++
			lf.run.s.observe(lf.key, v, step, true, float64(ts)/1e3, &j.tags)
		}
	case semconv.TrainingLogCSV:
		lf.lines = linetail.New(f, 0, s.buf)
		lf.onLine = func(line []byte) { s.csvLine(j, lf, line) }
	}
	lf.run = j.runOf(runKey{format, runDir})
	return lf
}

// csvLine takes a line of a CSVLogger's metrics.csv: its header first,
// then the rows, each a step's figures (empty cells for those not
// logged at it).
func (s *Source) csvLine(j *job, lf *logFile, line []byte) {
	if lf.header == nil {
		lf.header = append([]byte(nil), line...)
		lf.columns = lf.columns[:0]
		lf.stepCol = -1
		_, ok := splitCSV(line, s.scratch[:0], func(i int, b []byte) {
			if string(b) == "step" {
				lf.stepCol = i
			}
			lf.columns = append(lf.columns, append([]byte(nil), b...))
		})
		if !ok {
			s.countError(lf.format, semconv.TrainingErrorParse, 1)
		}
		return
	}
	step, hasStep := int64(0), false
	if lf.stepCol >= 0 {
		splitCSV(line, s.scratch[:0], func(i int, b []byte) {
			if i == lf.stepCol {
				step, hasStep = stepOf(b)
			}
		})
	}
	lf.records++
	_, ok := splitCSV(line, s.scratch[:0], func(i int, b []byte) {
		if i == lf.stepCol || i >= len(lf.columns) {
			return
		}
		if v, ok := parseNumber(b); ok {
			lf.run.s.observe(lf.columns[i], v, step, hasStep, 0, &j.tags)
		}
	})
	if !ok {
		s.countError(lf.format, semconv.TrainingErrorParse, 1)
	}
}

// read reads what the file gained since the last read, at most the read
// limit, and reports whether it grew.
func (s *Source) read(lf *logFile, now time.Time) {
	if lf.f == nil {
		return
	}
	if lf.format != semconv.TrainingLogTensorBoard && lf.dir != nil {
		s.reopenIfReplaced(lf)
	}
	_, size, err := idOf(lf.f)
	if err != nil {
		s.countError(lf.format, semconv.TrainingErrorRead, 1)
		lf.problem = err.Error()
		return
	}
	if lf.format == semconv.TrainingLogCSV && lf.header != nil && size >= int64(len(lf.header)) {
		// Lightning rewrites the file when a column is added: read it
		// again from its start when its header is not the one read.
		b := s.buf[:len(lf.header)+1]
		n, _ := lf.f.ReadAt(b, 0)
		if n < len(b) || !bytes.Equal(b[:len(lf.header)], lf.header) || b[len(lf.header)] != '\n' {
			lf.lines.Rewind()
			lf.header = nil
		}
	}
	before := lf.offset()
	lf.size = size
	if size == before {
		return
	}
	switch {
	case lf.tb != nil:
		c, err := lf.tb.Read(s.buf, size, s.cfg.readLimit, lf.onRec)
		s.countError(lf.format, semconv.TrainingErrorBadCRC, c.BadCRC)
		s.countError(lf.format, semconv.TrainingErrorCorrupt, c.Corrupt)
		s.countError(lf.format, semconv.TrainingErrorTooLarge, c.TooLarge)
		lf.pending = c.Pending
		if err != nil {
			s.countError(lf.format, semconv.TrainingErrorRead, 1)
			lf.problem = err.Error()
		}
	default:
		_, skipped, err := lf.lines.Read(size, int(s.cfg.readLimit), lf.onLine)
		s.countError(lf.format, semconv.TrainingErrorTooLarge, skipped)
		if err != nil {
			s.countError(lf.format, semconv.TrainingErrorRead, 1)
			lf.problem = err.Error()
		}
	}
	if lf.offset() != before {
		lf.lastGrowth = now
		lf.problem = ""
	}
}

// reopenIfReplaced opens a file again when the entry of its directory is
// another file than the one held (a writer that replaced it).
func (s *Source) reopenIfReplaced(lf *logFile) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(lf.dir.f.Fd()), lf.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return // gone: what was read stays
	}
	if (fileID{uint64(st.Dev), st.Ino}) == lf.id {
		return
	}
	f, err := procfs.OpenIn(lf.dir.f, lf.name)
	if err != nil {
		return
	}
	id, _, err := idOf(f)
	if err != nil {
		f.Close()
		return
	}
	lf.f.Close()
	lf.f, lf.id = f, id
	lf.header = nil
	switch {
	case lf.tb != nil:
		lf.tb = tfevents.NewReader(f, 0)
	default:
		lf.lines = linetail.New(f, 0, s.buf)
	}
}

// countError counts n read errors of a format.
func (s *Source) countError(format, why string, n int) {
	if n > 0 {
		s.errors[errKey{format, why}] += int64(n)
	}
}

type errKey struct{ format, why string }
