package meterx

import (
	"slices"
	"sync"
)

// Sources are the open Sources a package's metric Producer reports on:
// the registration every such Producer shares. The zero value is ready.
type Sources[S comparable] struct {
	mu   sync.Mutex
	list []S
}

// Add registers s.
func (p *Sources[S]) Add(s S) {
	p.mu.Lock()
	p.list = append(p.list, s)
	p.mu.Unlock()
}

// Remove unregisters s.
func (p *Sources[S]) Remove(s S) {
	p.mu.Lock()
	p.list = slices.DeleteFunc(p.list, func(o S) bool { return o == s })
	p.mu.Unlock()
}

// List returns the Sources registered now, a copy the caller may keep.
func (p *Sources[S]) List() []S {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.list)
}
