package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"

	"github.com/xpuscope/xpuscope/internal/nodebpf"
	"github.com/xpuscope/xpuscope/semconv"
)

// pageSize is the size the page counts are in.
var pageSize = uint64(os.Getpagesize())

// reloadShare is the share of a file's pages that must be evicted, then
// added back, for a reload: a quarter.
const reloadShare = 4

// maxFDs bounds the descriptors of one process a scan looks at.
const maxFDs = 4096

// fileState is the model files watched.
type fileState struct {
	m map[nodebpf.FileKey]*modelFile
	// named counts the files with series of their own (the cap).
	named int
}

// modelFile is a watched model file.
type modelFile struct {
	key          nodebpf.FileKey
	name, format string
	size         int64
	pages        uint64
	attrs        []attribute.KeyValue // the file's series'
	set          attribute.Set
	readahead    [2]attribute.Set // sync, async
	stats        nodebpf.FileStats
	procs        map[uint32]*fileProc
	// The reload watch: loaded once a load ended (or the file was found
	// held); then evictions past the bases, and the additions after them.
	loaded                bool
	evictBase             uint64
	evictedAt, evictPages uint64
	addBase               uint64
	reloads               int64
}

// fileProc is a process's use of a watched file.
type fileProc struct {
	pid      uint32
	stats    nodebpf.ProcStats
	reported uint64 // the burst whose load was recorded
	set      attribute.Set
	// gone: the process exited; its series goes once the collection
	// numbered goneAt (or a later one) has reported it.
	gone   bool
	goneAt int64
}

func (f *fileState) init() { f.m = map[nodebpf.FileKey]*modelFile{} }

// ordered returns the files by name.
func (f *fileState) ordered() []*modelFile {
	out := make([]*modelFile, 0, len(f.m))
	for _, m := range f.m {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *modelFile) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(a.key.Ino) - int(b.key.Ino)
	})
	return out
}

// fileID is a file's id attribute: its device and inode as stat(2) gives
// them.
func fileID(k nodebpf.FileKey) string {
	dev := nodebpf.UserDev(k.Dev)
	return fmt.Sprintf("%d:%d:%d", unix.Major(dev), unix.Minor(dev), k.Ino)
}

// file returns the watched file k, adding it (named name, of format and
// size) if it is new.
func (s *Source) file(k nodebpf.FileKey, name, format string, size int64) *modelFile {
	f := s.files.m[k]
	if f != nil {
		if f.name == semconv.Unknown && name != semconv.Unknown {
			f.name, f.format, f.size = name, format, size
			f.label(s)
		}
		return f
	}
	f = &modelFile{key: k, name: name, format: format, size: size, procs: map[uint32]*fileProc{}}
	f.label(s)
	s.files.m[k] = f
	return f
}

// label makes the file's attributes: its own, or _OTHER's past the cap.
func (f *modelFile) label(s *Source) {
	f.pages = (uint64(f.size) + pageSize - 1) / pageSize
	name, id := f.name, fileID(f.key)
	if f.attrs == nil { // the first labelling takes a place under the cap
		if s.files.named >= s.cfg.maxFiles {
			name, id = semconv.Other, semconv.Other
		} else {
			s.files.named++
		}
	} else if f.attrs[1].Value.AsString() == semconv.Other {
		name, id = semconv.Other, semconv.Other
	}
	f.attrs = []attribute.KeyValue{semconv.XpuscopeModelFileName.String(name), semconv.XpuscopeModelFileID.String(id),
		semconv.XpuscopeModelFileFormat.String(f.format)}
	f.set = attribute.NewSet(f.attrs...)
	f.readahead[0] = attribute.NewSet(append(slices.Clip(f.attrs), semconv.XpuscopeReadaheadKind.String(semconv.ReadaheadSync))...)
	f.readahead[1] = attribute.NewSet(append(slices.Clip(f.attrs), semconv.XpuscopeReadaheadKind.String(semconv.ReadaheadAsync))...)
	for _, p := range f.procs {
		p.set = s.procSet(f, p.pid)
	}
}

// procSet is the attribute set of pid's series of f.
func (s *Source) procSet(f *modelFile, pid uint32) attribute.Set {
	kvs := slices.Clip(f.attrs)
	if o := s.owner(pid); !o.over {
		kvs = append(kvs, semconv.ProcessPID.Int(int(pid)), semconv.ProcessExecutableName.String(o.exe))
		kvs = append(kvs, o.attrs...)
	}
	return attribute.NewSet(kvs...)
}

// proc returns pid's use of f, adding it if it is new.
func (s *Source) proc(f *modelFile, pid uint32) *fileProc {
	p := f.procs[pid]
	if p == nil {
		p = &fileProc{pid: pid, set: s.procSet(f, pid)}
		f.procs[pid] = p
	}
	return p
}

// opened takes a model file's open, which the kernel side watched.
func (s *Source) opened(r *nodebpf.OpenRecord) {
	f := s.file(r.File, string(r.Name), formatName(r.Format), int64(r.Size))
	s.proc(f, r.PID)
}

// scan looks at every process's file mappings and descriptors for model
// files, and watches those it finds.
func (s *Source) scan(now time.Time) {
	s.nextScan = now.Add(s.cfg.scanInterval)
	pids, err := s.procs.PIDs()
	if err != nil {
		return
	}
	for _, pid := range pids {
		if pid == s.self {
			continue
		}
		s.scanProcess(pid)
	}
}

// found is a model file a scan found in a process.
type found struct {
	key          nodebpf.FileKey
	name, format string
	size         int64
}

func (s *Source) scanProcess(pid int) {
	p := s.procs.Proc(pid)
	var (
		hits   []found
		mapped []nodebpf.Mapping // of candidate files
	)
	seen := map[nodebpf.FileKey]bool{}
	if maps, err := p.Maps(); err == nil {
		// Every mapping, not one a file (maps.Files): faults are matched
		// against each.
		for _, m := range maps {
			k := nodebpf.FileKey{Dev: nodebpf.KernelDev(m.Dev), Ino: m.Inode}
			if m.Inode == 0 || !candidate(m.Path) {
				continue
			}
			mapped = append(mapped, nodebpf.Mapping{Start: m.Start, End: m.End, File: k})
			if seen[k] {
				continue
			}
			seen[k] = true
			f, err := p.OpenMapped(m)
			if err != nil {
				continue
			}
			if h, ok := classify(f, m.Path); ok {
				h.key = k
				hits = append(hits, h)
			}
			f.Close()
		}
	}
	dir := filepath.Join(p.Dir(), "fd")
	if ents, err := os.ReadDir(dir); err == nil {
		for i, e := range ents {
			if i == maxFDs {
				break
			}
			target, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil || !strings.HasPrefix(target, "/") || !candidate(target) {
				continue
			}
			f, err := os.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			if h, ok := classify(f, target); ok {
				var st syscall.Stat_t
				if syscall.Fstat(int(f.Fd()), &st) == nil {
					h.key = nodebpf.FileKey{Dev: nodebpf.KernelDev(uint64(st.Dev)), Ino: st.Ino}
					if !seen[h.key] {
						seen[h.key] = true
						hits = append(hits, h)
					}
				}
			}
			f.Close()
		}
	}
	for _, h := range hits {
		f, known := s.files.m[h.key]
		if !known {
			ok, err := s.objs.Watch(h.key)
			if err != nil {
				continue
			}
			if !ok {
				s.over[reasonFiles]++
				continue
			}
			f = s.file(h.key, h.name, h.format, h.size)
			// Held already: loaded before the Source started.
			f.loaded = true
		}
		s.proc(f, uint32(pid))
	}
	// The mappings of watched files, which the kernel side did not see
	// made if they were made before the Source started: its faults are
	// matched against them.
	var watched []nodebpf.Mapping
	for _, m := range mapped {
		if _, ok := s.files.m[m.File]; ok {
			watched = append(watched, m)
		}
	}
	if dropped, err := s.objs.WatchMappings(uint32(pid), watched); err == nil && dropped > s.unheld[uint32(pid)] {
		// Every scan finds them again: count each once.
		s.over[reasonMappings] += int64(dropped - s.unheld[uint32(pid)])
		s.unheld[uint32(pid)] = dropped
	}
}

// candidate says whether a path may be a model file's, by its name: a
// model file's extension, or a Hugging Face cache's blob.
func candidate(path string) bool {
	name := path[strings.LastIndexByte(path, '/')+1:]
	if _, ok := formatOf(name, 1<<62); ok {
		return true
	}
	return isHFBlob(path)
}

// classify reads what a scan needs of a candidate file: its size, and,
// for a Hugging Face blob, its format from its first bytes.
func classify(f *os.File, path string) (found, bool) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return found{}, false
	}
	name := path[strings.LastIndexByte(path, '/')+1:]
	if format, ok := formatOf(name, st.Size()); ok {
		return found{name: name, format: formatName(format), size: st.Size()}, true
	}
	if !isHFBlob(path) {
		return found{}, false
	}
	format := sniffFormat(f, st.Size())
	if format == nodebpf.FormatNone || uint64(st.Size()) < minSizes()[format] {
		return found{}, false
	}
	return found{name: name, format: formatName(format), size: st.Size()}, true
}

// readFiles reads the kernel's counts of the watched files and their
// processes, ends the loads that paused by now (CLOCK_MONOTONIC ns), and
// finds the reloads.
func (s *Source) readFiles(now uint64) {
	_ = s.objs.EachFile(func(k nodebpf.FileKey, st *nodebpf.FileStats) {
		f := s.file(k, semconv.Unknown, semconv.Unknown, 0)
		f.stats = *st
	})
	_ = s.objs.EachProc(func(k nodebpf.FileKey, pid uint32, st *nodebpf.ProcStats) {
		f := s.files.m[k]
		if f == nil {
			return
		}
		p := s.proc(f, pid)
		p.stats = *st
		if st.LastIo != 0 && st.Burst != p.reported && now > st.LastIo && now-st.LastIo >= uint64(s.cfg.burstGap) {
			p.reported = st.Burst
			s.loadEnded(f, p)
		}
	})
	for _, f := range s.files.m {
		s.watchReload(f)
	}
}

// loadEnded records the load (or reload) p's burst of reads and faults
// of f was.
func (s *Source) loadEnded(f *modelFile, p *fileProc) {
	d := time.Duration(p.stats.LastIo - p.stats.Burst).Seconds()
	exe := semconv.Other
	if o := s.owner(p.pid); !o.over {
		exe = o.exe
	}
	s.inst.loadDuration.Record(context.Background(), d, metric.WithAttributes(f.attrs[0], f.attrs[2],
		semconv.ProcessExecutableName.String(exe)))
	if !f.loaded {
		f.loaded = true
		f.evictBase, f.addBase = f.stats.Evicted, f.stats.Added
	}
}

// watchReload looks for a reload of f: a quarter of its pages or more
// evicted since it was loaded (or last reloaded), then a quarter or more
// added back.
func (s *Source) watchReload(f *modelFile) {
	if !f.loaded || f.pages == 0 {
		return
	}
	st := &f.stats
	if f.evictedAt == 0 {
		if ev := st.Evicted - f.evictBase; ev*reloadShare >= f.pages {
			f.evictedAt, f.evictPages, f.addBase = st.LastEvict, ev, st.Added
		}
		return
	}
	added := st.Added - f.addBase
	if added*reloadShare < f.pages {
		return
	}
	f.reloads++
	s.reloaded(f, added)
	f.evictBase, f.evictedAt = st.Evicted, 0
}

// reloaded tells of f's reload: a span on the process that read it back
// (the one whose reads or faults came last), and a log record.
func (s *Source) reloaded(f *modelFile, added uint64) {
	var p *fileProc
	for _, q := range f.procs {
		if !q.gone && (p == nil || q.stats.LastIo > p.stats.LastIo) {
			p = q
		}
	}
	start, end := s.wall(f.evictedAt), s.wall(max(f.stats.LastAdd, f.evictedAt))
	kvs := append(slices.Clip(f.attrs), semconv.XpuscopeModelFilePagesEvicted.Int64(int64(f.evictPages)),
		semconv.XpuscopeModelFilePagesAdded.Int64(int64(added)))
	ctx := context.Background()
	pid := 0
	if p != nil {
		pid = int(p.pid)
		o := s.owner(p.pid)
		if !o.over {
			kvs = append(kvs, semconv.ProcessPID.Int(pid), semconv.ProcessExecutableName.String(o.exe))
			kvs = append(kvs, o.attrs...)
		}
		if r := s.cfg.resolver; r != nil && !o.over {
			if _, sc := r.ProcessAttributes(pid); sc.IsValid() {
				ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
			}
		}
	}
	_, span := s.tracer.Start(ctx, semconv.SpanModelFileReload.Name, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kvs...))
	span.AddEvent("model.file.evicted", trace.WithTimestamp(start),
		trace.WithAttributes(semconv.XpuscopeModelFilePagesEvicted.Int64(int64(f.evictPages))))
	span.End(trace.WithTimestamp(end))
	if l := s.cfg.logger; l != nil {
		l.Warn("model file reloaded: its pages were evicted from the page cache and read back",
			"file", f.name, "id", fileID(f.key), "format", f.format, "pid", pid,
			"pages_evicted", f.evictPages, "pages_added", added, "evicted_at", start, "reloaded_by", end)
	}
}

// forgetExited marks the processes that exited, forgets them in the
// kernel, and drops their series once a collection reported them.
func (s *Source) forgetExited() {
	collected := s.collections.Load()
	alive := map[uint32]bool{}
	isAlive := func(pid uint32) bool {
		v, ok := alive[pid]
		if !ok {
			v = s.alive(pid)
			alive[pid] = v
		}
		return v
	}
	dead := false
	for _, f := range s.files.m {
		for pid, p := range f.procs {
			switch {
			case p.gone && collected > p.goneAt:
				delete(f.procs, pid)
			case !p.gone && !isAlive(pid):
				p.gone, p.goneAt, dead = true, collected, true
			}
		}
	}
	if dead {
		_ = s.objs.ForgetProcs(func(k nodebpf.FileKey, pid uint32) bool {
			f := s.files.m[k]
			if f == nil {
				return isAlive(pid)
			}
			p := f.procs[pid]
			return p == nil || !p.gone
		})
	}
	for pid := range s.owners.m {
		if !isAlive(pid) {
			s.forgetOwner(pid)
		}
	}
	for pid := range s.unheld {
		if !isAlive(pid) {
			delete(s.unheld, pid)
		}
	}
}
