package gpu

// Status is what the Source reads, backend by backend: a copy the caller
// may keep.
type Status struct {
	// Backends lists every backend selected (WithBackends), in the order
	// New tried them.
	Backends []BackendStatus
}

// BackendStatus is one backend's state.
type BackendStatus struct {
	Backend Backend
	// Active is set when the backend found devices and reads them.
	Active bool
	// Devices is how many devices it reads: GPUs, MIG instances and TPU
	// chips (or cores).
	Devices int
	// Detail says what the backend reads and how (DCGM: the host engine,
	// the profiling fields watched, whether another profiler holds the
	// counters), or, for a backend that is not active, why: the error New
	// met, or the backend that made it a fallback not tried.
	Detail string
}

// describer is a backend that says what it reads, for Status. The Source
// calls describe under its poll lock.
type describer interface {
	describe() (devices int, detail string)
}

// backendState is what New learnt of one backend.
type backendState struct {
	kind    Backend
	b       backend // nil when it is not active
	devices int     // devices it appended to Source.devices
	why     string  // why it is not active
}

// Status returns the state of each backend.
func (s *Source) Status() Status {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	st := Status{Backends: make([]BackendStatus, 0, len(s.states))}
	for _, bs := range s.states {
		out := BackendStatus{Backend: bs.kind, Active: bs.b != nil, Devices: bs.devices, Detail: bs.why}
		if d, ok := bs.b.(describer); ok {
			out.Devices, out.Detail = d.describe()
		}
		st.Backends = append(st.Backends, out)
	}
	return st
}
