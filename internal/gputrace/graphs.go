package gputrace

import (
	"context"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
)

// CUDA graphs. A process's graphs are learnt as it builds them, by stream
// capture: from cudaStreamBeginCapture to cudaStreamEndCapture, the
// kernels launched on the capturing stream (and on the streams that join
// the capture by waiting for an event recorded on it) are the graph's,
// not runs, and EndCapture's return names the graph; or node by node:
// cudaGraphCreate's return names an empty graph, to which
// cudaGraphAddKernelNode adds a kernel and cudaGraphAddChildGraphNode a
// copy of another graph's, and cudaGraphClone copies one. Then
// cudaGraphInstantiate's return names the executable graph made of it. Each cudaGraphLaunch of a known
// executable graph then counts its kernels, by name, under the graph
// launch's cuda.api.name (so replays and direct launches stay apart), and
// feeds them to the occupancy model on the launch's stream. The replay of
// an executable graph whose kernels are not known (a graph created before
// the agent attached, one that embeds such a graph, or past the bounds)
// counts no kernel: it counts in xpuscope.cuda.graph.replays.unknown.
//
// The engine follows the calls made, not their success: a record's
// return code says whether a call failed, but a capture that fails leaves
// NULL where the graph would be, and a failed begin leaves the stream's
// launches failing too. Handles are a process's own, so the fold of
// processes past the cap learns no graph.

// graphKernel is one kernel node of a graph, as the launch that made it
// passed it.
type graphKernel struct {
	fn          uint64
	handle      bool // fn is a module function handle (a driver launch), not a host stub
	grid, block [3]uint32
	smem        uint64
}

// capture is a stream capture under way: the graph's kernels so far and
// the streams taking part.
type capture struct {
	nodes   graphNodes
	streams []uint64
}

// graphNodes are the kernels of a graph, shared by the graph, its clones
// and the executable graphs made of it, and held while any of them is; a
// node added to a graph that shares them copies them first (own).
type graphNodes struct {
	kernels []graphKernel
	refs    int
	partial bool // some of the graph's kernels are not known: its replays count none
}

// procGraphs is what a process's graphs are known to hold.
type procGraphs struct {
	capturing map[uint64]*capture // stream → its capture
	joins     map[uint64]*capture // event recorded on a capturing stream → the capture, until it ends
	graphs    map[uint64]*graphNodes
	execs     map[uint64]*graphNodes
	kernels   int // held by the captures and the graphNodes, for maxGraphKernels
}

// Bounds of a process's graphs.
const (
	maxGraphs       = 1 << 12 // graphs, executable graphs and captures, each
	maxGraphKernels = 1 << 15 // kernel nodes held, all graphs together
	maxJoins        = 1 << 10 // events recorded on capturing streams
)

func (p *proc) graphState() *procGraphs {
	if p.graphs == nil {
		p.graphs = &procGraphs{capturing: map[uint64]*capture{}, joins: map[uint64]*capture{},
			graphs: map[uint64]*graphNodes{}, execs: map[uint64]*graphNodes{}}
	}
	return p.graphs
}

// captured takes a launch on a capturing stream as a kernel of the
// graph being captured, reporting whether it did.
func (a *aggregator) captured(p *proc, e *gputracebpf.Event) bool {
	g := p.graphs
	if g == nil || len(g.capturing) == 0 {
		return false
	}
	c := g.capturing[stream(e, e.Stream())]
	if c == nil {
		return false
	}
	g.add(&c.nodes, kernelOf(e))
	return true
}

// kernelOf is the kernel a KindLaunch or KindGraphKernelNode record
// names.
func kernelOf(e *gputracebpf.Event) graphKernel {
	return graphKernel{fn: e.Func(), handle: e.API.Handle(), grid: e.Grid(), block: e.Block(), smem: e.SharedMem()}
}

// graphCall follows a call that builds, joins or frees graphs.
func (a *aggregator) graphCall(p *proc, e *gputracebpf.Event) {
	if p == a.other {
		return
	}
	switch e.Kind {
	case gputracebpf.KindCaptureBegin:
		g := p.graphState()
		s := stream(e, e.Stream())
		if g.capturing[s] == nil && len(g.capturing) < maxGraphs {
			g.capturing[s] = &capture{streams: []uint64{s}}
		}
	case gputracebpf.KindEventRecord:
		if g := p.graphs; g != nil && len(g.capturing) > 0 {
			if c := g.capturing[stream(e, e.Stream())]; c != nil && len(g.joins) < maxJoins {
				g.joins[e.EventHandle()] = c
			} else {
				delete(g.joins, e.EventHandle()) // re-recorded outside the capture
			}
		}
	case gputracebpf.KindStreamWait:
		if g := p.graphs; g != nil && len(g.joins) > 0 {
			s := stream(e, e.Stream())
			if c := g.joins[e.EventHandle()]; c != nil && g.capturing[s] == nil {
				g.capturing[s] = c
				c.streams = append(c.streams, s)
			}
		}
	case gputracebpf.KindCaptureEnd:
		g := p.graphs
		if g == nil {
			return
		}
		c := g.capturing[stream(e, e.Stream())]
		if c == nil {
			return
		}
		for _, s := range c.streams {
			delete(g.capturing, s)
		}
		for ev, j := range g.joins {
			if j == c {
				delete(g.joins, ev)
			}
		}
		if e.Graph() == 0 { // the capture failed
			g.kernels -= len(c.nodes.kernels)
			return
		}
		g.bind(g.graphs, e.Graph(), &c.nodes)
	case gputracebpf.KindGraphInstantiate:
		if g := p.graphs; g != nil && e.GraphExec() != 0 {
			g.bind(g.execs, e.GraphExec(), g.graphs[e.Graph()])
		}
	case gputracebpf.KindGraphCreate:
		if e.Graph() != 0 {
			g := p.graphState()
			g.bind(g.graphs, e.Graph(), &graphNodes{})
		}
	case gputracebpf.KindGraphClone:
		if g := p.graphs; g != nil && e.Graph() != 0 {
			g.bind(g.graphs, e.Graph(), g.graphs[e.SourceGraph()])
		}
	case gputracebpf.KindGraphKernelNode:
		if n := p.graphs.own(e.Graph()); n != nil {
			p.graphs.add(n, kernelOf(e))
		}
	case gputracebpf.KindGraphChildNode:
		if n := p.graphs.own(e.Graph()); n != nil {
			child := p.graphs.graphs[e.SourceGraph()]
			if child == nil || child.partial {
				p.graphs.forget(n)
				return
			}
			p.graphs.add(n, child.kernels...)
		}
	case gputracebpf.KindGraphDestroy:
		if g := p.graphs; g != nil {
			g.bind(g.graphs, e.Graph(), nil)
		}
	case gputracebpf.KindGraphExecDestroy:
		if g := p.graphs; g != nil {
			g.bind(g.execs, e.GraphExec(), nil)
		}
	}
}

// bind makes handle in m (g.graphs or g.execs) stand for n, or for
// nothing when n is nil or m is full, releasing what it stood for: a
// handle the process reuses names its new graph.
func (g *procGraphs) bind(m map[uint64]*graphNodes, handle uint64, n *graphNodes) {
	old := m[handle]
	if old == n {
		return // a graph cloned onto its own handle, say
	}
	if old != nil {
		delete(m, handle)
		if old.refs--; old.refs == 0 {
			g.kernels -= len(old.kernels)
		}
	}
	if n == nil || len(m) >= maxGraphs {
		if n != nil && n.refs == 0 {
			g.kernels -= len(n.kernels)
		}
		return
	}
	n.refs++
	m[handle] = n
}

// own returns the nodes of graph for a node to be added to them, copied
// first if the graph shares them; nil if the graph is not known (created
// before the agent attached: adding to it would make a graph that is
// short).
func (g *procGraphs) own(graph uint64) *graphNodes {
	if g == nil {
		return nil
	}
	n := g.graphs[graph]
	if n == nil || n.refs == 1 {
		return n
	}
	mine := &graphNodes{partial: n.partial}
	if g.kernels+len(n.kernels) > maxGraphKernels {
		mine.partial = true
	} else {
		mine.kernels = append([]graphKernel(nil), n.kernels...)
		g.kernels += len(n.kernels)
	}
	g.bind(g.graphs, graph, mine)
	return mine
}

// add appends kernels to n, which no other graph shares; past
// maxGraphKernels n is forgotten instead.
func (g *procGraphs) add(n *graphNodes, kernels ...graphKernel) {
	if n.partial {
		return
	}
	if g.kernels+len(kernels) > maxGraphKernels {
		g.forget(n)
		return
	}
	n.kernels = append(n.kernels, kernels...)
	g.kernels += len(kernels)
}

// forget makes n, which no other graph shares, partial: some of its
// kernels are not known, so its replays use none, and it lets go of those
// it held.
func (g *procGraphs) forget(n *graphNodes) {
	g.kernels -= len(n.kernels)
	n.kernels, n.partial = nil, true
}

// replay counts the kernels of the executable graph a KindGraphLaunch
// record launches and feeds them to the occupancy model, returning how
// many there were; -1 when they are not known.
func (a *aggregator) replay(ctx context.Context, p *proc, e *gputracebpf.Event) int {
	var n *graphNodes
	if g := p.graphs; g != nil {
		n = g.execs[e.GraphExec()]
	}
	if n == nil || n.partial {
		a.unknownReplays++
		return -1
	}
	k := gputracebpf.Event{TS: e.TS, PID: e.PID, TID: e.TID, API: e.API, Device: e.Device}
	for i := range n.kernels {
		kn := &n.kernels[i]
		k.SetLaunch(kn.fn, kn.grid, kn.block, kn.smem, e.Stream())
		a.model(&k)
		a.countLaunch(ctx, p, &k, kn.handle)
	}
	return len(n.kernels)
}
