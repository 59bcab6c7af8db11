// Package ringpoll paces the reader of a BPF ring buffer whose programs
// skip the wakeup of most records, to spare the traced process a wakeup
// per call, and force one only when the ring fills past a mark. Such a
// reader must look on its own from time to time, or records below the mark
// would wait without end.
//
// A Pacer says how long to wait each time: the poll interval while records
// come, and, while none do, twice the last wait, up to an idle bound. A
// tracer with nothing attached, the usual state of most tracers on a node,
// then wakes once a second instead of twenty times. No record is lost by
// waiting longer: the forced wakeup still comes at the mark.
package ringpoll
