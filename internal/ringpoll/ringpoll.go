package ringpoll

import "time"

// IdleWait is the longest a Pacer waits while no records come, unless the
// poll interval is longer.
const IdleWait = time.Second

// Pacer is the wait of one reader. It is not safe for concurrent use.
type Pacer struct {
	interval, idle, wait time.Duration
}

// New returns a Pacer that waits interval while records come.
func New(interval time.Duration) *Pacer {
	return &Pacer{interval: interval, idle: max(interval, IdleWait), wait: interval}
}

// Wait returns how long to wait for records now.
func (p *Pacer) Wait() time.Duration { return p.wait }

// Next returns how long to wait for records next, given how many the last
// wait brought.
func (p *Pacer) Next(records int) time.Duration {
	if records > 0 {
		p.wait = p.interval
	} else {
		p.wait = min(2*p.wait, p.idle)
	}
	return p.wait
}
