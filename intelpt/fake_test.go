package intelpt

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xpuscope/xpuscope/internal/perfevent"
	"github.com/xpuscope/xpuscope/internal/perfevent/perfeventtest"
)

// fakeEvent stands in for an intel_pt event and its rings: this machine
// has no Intel PT. Each Wait plays the next step of its script: the bytes
// the PMU writes to the AUX area (a ring of auxSize bytes, overwritten in
// snapshot mode) with the PERF_RECORD_AUX that announces them, and
// sideband records, as the kernel lays them out. It records what the
// capture did to it, so that a test can check nothing was left enabled.
type fakeEvent struct {
	mu       sync.Mutex
	attr     perfevent.TraceAttr
	aux      []byte
	head     uint64 // AUX bytes written
	consumed uint64
	pending  [][]byte // records not read yet
	steps    []step
	waits    int

	enabled, closed bool
	disables        int
	enableErr       error
	waitErr         error // returned by Wait once the steps are played
	block           chan struct{}
	hupAtEnd        bool
	sleep           bool // Wait sleeps its timeout once the steps are played
}

type step struct {
	aux       []byte // written to the AUX area, announced by an AUX record
	truncated bool
	records   [][]byte // other records, before the AUX record
}

func (f *fakeEvent) Enable() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.enableErr != nil {
		return f.enableErr
	}
	f.enabled = true
	return nil
}

func (f *fakeEvent) Disable() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enabled = false
	f.disables++
	return nil
}

func (f *fakeEvent) Wait(d time.Duration) (bool, error) {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	if f.waits < len(f.steps) {
		st := f.steps[f.waits]
		f.waits++
		f.play(st)
		f.mu.Unlock()
		return false, nil
	}
	f.waits++
	err, hup, sleep := f.waitErr, f.hupAtEnd, f.sleep
	f.mu.Unlock()
	if sleep {
		time.Sleep(d)
	}
	return hup, err
}

// play writes a step as the PMU and the kernel would.
func (f *fakeEvent) play(st step) {
	f.pending = append(f.pending, st.records...)
	if len(st.aux) == 0 {
		return
	}
	off := f.head
	for i, b := range st.aux {
		f.aux[(off+uint64(i))%uint64(len(f.aux))] = b
	}
	f.head += uint64(len(st.aux))
	var flags uint64
	if st.truncated {
		flags = perfevent.AuxFlagTruncated
	}
	f.pending = append(f.pending, auxRecord(off, uint64(len(st.aux)), flags))
}

func (f *fakeEvent) Records(fn func(uint32, uint16, []byte) error) error {
	f.mu.Lock()
	recs := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, r := range recs {
		if err := fn(binary.NativeEndian.Uint32(r), binary.NativeEndian.Uint16(r[4:]), r); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeEvent) AUX(off, n uint64) ([]byte, []byte) {
	size := uint64(len(f.aux))
	start := off % size
	if start+n <= size {
		return f.aux[start : start+n], nil
	}
	return f.aux[start:], f.aux[:start+n-size]
}

func (f *fakeEvent) AUXHead() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}

func (f *fakeEvent) ConsumeAUX(upto uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if upto < f.consumed {
		panic("aux_tail moved back")
	}
	f.consumed = upto
}

func (f *fakeEvent) TimeConv() perfevent.TimeConv {
	return perfevent.TimeConv{Shift: 31, Mult: 1234567, Zero: 42, Valid: true}
}

func (f *fakeEvent) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enabled = false
	f.closed = true
	return nil
}

// state says whether the event is enabled and closed.
func (f *fakeEvent) state() (enabled, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.enabled, f.closed
}

// fakeOpener hands out fake events, or fails as told.
type fakeOpener struct {
	mu      sync.Mutex
	opened  []*fakeEvent
	err     error
	prepare func(*fakeEvent)
}

func (o *fakeOpener) open(a perfevent.TraceAttr, dataPages, auxPages int, snapshot bool) (event, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return nil, o.err
	}
	f := &fakeEvent{attr: a, aux: make([]byte, auxPages*perfevent.PageSize)}
	if o.prepare != nil {
		o.prepare(f)
	}
	o.opened = append(o.opened, f)
	return f, nil
}

func (o *fakeOpener) events() []*fakeEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*fakeEvent(nil), o.opened...)
}

// sampleID is the sample_id trailer of SidebandSampleType: pid and tid,
// time, cpu and reserved, id.
func sampleID(pid uint32) []byte {
	b := make([]byte, 32)
	binary.NativeEndian.PutUint32(b[0:], pid)
	binary.NativeEndian.PutUint32(b[4:], pid)
	binary.NativeEndian.PutUint64(b[8:], 1_000_000)
	binary.NativeEndian.PutUint64(b[24:], 7)
	return b
}

func record(typ uint32, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	binary.NativeEndian.PutUint32(b, typ)
	binary.NativeEndian.PutUint16(b[6:], uint16(8+len(body)))
	return append(b, body...)
}

func auxRecord(off, size, flags uint64) []byte {
	body := make([]byte, 24)
	binary.NativeEndian.PutUint64(body[0:], off)
	binary.NativeEndian.PutUint64(body[8:], size)
	binary.NativeEndian.PutUint64(body[16:], flags)
	return record(perfevent.RecordAux, append(body, sampleID(4242)...))
}

func commRecord(pid uint32, comm string) []byte {
	body := make([]byte, 8)
	binary.NativeEndian.PutUint32(body[0:], pid)
	binary.NativeEndian.PutUint32(body[4:], pid)
	name := make([]byte, 16)
	copy(name, comm)
	return record(perfevent.RecordComm, append(append(body, name...), sampleID(pid)...))
}

func lostRecord(n uint64) []byte {
	body := make([]byte, 16)
	binary.NativeEndian.PutUint64(body[0:], 7)
	binary.NativeEndian.PutUint64(body[8:], n)
	return record(perfevent.RecordLost, append(body, sampleID(4242)...))
}

// newSource makes a Source on the intel_pt fixture with the fake opener,
// captures going to a temporary directory.
func newSource(t testing.TB, o *fakeOpener, opts ...Option) (*Source, *sdkmetric.ManualReader, string) {
	t.Helper()
	tree := perfeventtest.Write(t, "intel_pt")
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(t.Context()) })
	dir := t.TempDir() + "/captures"
	s, err := New(append([]Option{
		WithMeterProvider(mp), WithSysfsRoot(tree.Sys), WithProcRoot(tree.Proc), WithCaptureDir(dir), withOpener(o.open),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, reader, dir
}

var errInjected = errors.New("injected")
