package gputrace

import (
	"context"

	"github.com/xpuscope/xpuscope/internal/gputracebpf"
)

// CUDA graphs. A process's graphs are learnt as it builds them, by stream
// capture: from cudaStreamBeginCapture to cudaStreamEndCapture, the
// kernels launched on the capturing stream (and on the streams that join
// the capture by waiting for an event recorded on it) are the graph's,
// not runs, and EndCapture's return names the graph (a capture begun by
// cudaStreamBeginCaptureToGraph adds them to a graph that exists); or node
// by node: cudaGraphCreate's return names an empty graph, to which
// cudaGraphAddKernelNode (or the generic cudaGraphAddNode) adds a kernel,
// whose node handle its return names, and cudaGraphAddChildGraphNode a
// copy of another graph's, and cudaGraphClone copies one. Then
// cudaGraphInstantiate's return names the executable graph made of it.
// Each cudaGraphLaunch of a known executable graph then counts its
// kernels, by name, under the graph launch's cuda.api.name (so replays and
// direct launches stay apart), and feeds them to the occupancy model on
// the launch's stream. The replay of an executable graph whose kernels
// are not known (a graph created before the agent attached, one that
// embeds such a graph, or past the bounds) counts no kernel: it counts in
// xpuscope.cuda.graph.replays.unknown.
//
// Kernels change: cudaGraphKernelNodeSetParams changes a graph's node,
// cudaGraphExecKernelNodeSetParams an executable graph's (named by the
// node of the graph it was made of), and a cudaGraphExecUpdate that
// succeeded gives an executable graph the kernels of another graph. A node
// handle the engine does not know (the nodes of a capture, of a clone, of
// an embedded child graph: no call names them) cannot say which kernel
// changed: the graphs that may hold it count their replays as unknown
// from then on.
//
// The engine follows the calls made, not their success (but for
// cudaGraphExecUpdate, which a process may try and see refused): a
// record's return code says whether a call failed, but a capture that
// fails leaves NULL where the graph would be, and a failed begin leaves
// the stream's launches failing too. Handles are a process's own, so the
// fold of processes past the cap learns no graph.

// graphKernel is one kernel node of a graph, as the launch that made it
// passed it.
type graphKernel struct {
	fn          uint64
	handle      bool // fn is a module function handle (a driver launch), not a host stub
	grid, block [3]uint32
	smem        uint64
	// node is the kernel node's handle in the graph it was added to,
	// which also names it in the executable graphs made of that graph; 0
	// where no call named it (a captured kernel, the copy of a node in a
	// clone, a child graph or an updated executable graph, a node whose
	// making's return was not seen).
	node uint64
}

// capture is a stream capture under way: the graph's kernels so far and
// the streams taking part.
type capture struct {
	nodes   graphNodes
	streams []uint64
	target  uint64 // the graph captured into (cudaStreamBeginCaptureToGraph); 0 for a new graph
}

// graphNodes are the kernels of a graph, shared by the graph and the
// executable graphs made of it, and held while any of them is; a change
// to one that shares them copies them first (own).
type graphNodes struct {
	kernels []graphKernel
	refs    int
	partial bool // some of the graph's kernels are not known: its replays count none
}

// nodeRef is where a named kernel node is: its graph and its index there.
type nodeRef struct {
	graph uint64
	i     int
}

// procGraphs is what a process's graphs are known to hold.
type procGraphs struct {
	capturing map[uint64]*capture // stream → its capture
	joins     map[uint64]*capture // event recorded on a capturing stream → the capture, until it ends
	graphs    map[uint64]*graphNodes
	execs     map[uint64]*graphNodes
	kernels   int // held by the captures and the graphNodes, for maxGraphKernels
	// nodes are the kernel nodes named by their making's return, by
	// handle; an entry whose graph no longer holds the node there is
	// stale, and goes when the map is full (sweepNodes).
	nodes map[uint64]nodeRef
	// adding is the kernel node each thread is adding, until the call's
	// return names it.
	adding map[uint32]nodeRef
}

// Bounds of a process's graphs.
const (
	maxGraphs       = 1 << 12 // graphs, executable graphs and captures, each
	maxGraphKernels = 1 << 15 // kernel nodes held, all graphs together; named nodes
	maxJoins        = 1 << 10 // events recorded on capturing streams
	maxAdding       = 1 << 10 // threads adding a kernel node
)

func (p *proc) graphState() *procGraphs {
	if p.graphs == nil {
		p.graphs = &procGraphs{capturing: map[uint64]*capture{}, joins: map[uint64]*capture{},
			graphs: map[uint64]*graphNodes{}, execs: map[uint64]*graphNodes{}, nodes: map[uint64]nodeRef{},
			adding: map[uint32]nodeRef{}}
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

// kernelOf is the kernel a KindLaunch, KindGraphKernelNode,
// KindGraphNodeParams or KindGraphExecNodeParams record names.
func kernelOf(e *gputracebpf.Event) graphKernel {
	return graphKernel{fn: e.Func(), handle: e.API.Handle(), grid: e.Grid(), block: e.Block(), smem: e.SharedMem()}
}

// graphCall follows a call that builds, joins, changes or frees graphs.
func (a *aggregator) graphCall(p *proc, e *gputracebpf.Event) {
	if p == a.other {
		return
	}
	switch e.Kind {
	case gputracebpf.KindCaptureBegin:
		g := p.graphState()
		s := stream(e, e.Stream())
		if g.capturing[s] == nil && len(g.capturing) < maxGraphs {
			g.capturing[s] = &capture{streams: []uint64{s}, target: e.Graph()}
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
		if g := p.graphs; g != nil {
			g.endCapture(stream(e, e.Stream()), e.Graph())
		}
	case gputracebpf.KindGraphInstantiate:
		if g := p.graphs; g != nil && e.GraphExec() != 0 {
			g.bind(g.execs, e.GraphExec(), g.graphs[e.Graph()])
		}
	case gputracebpf.KindGraphCreate:
		if e.Graph() != 0 {
			g := p.graphState()
			g.bindGraph(e.Graph(), &graphNodes{})
		}
	case gputracebpf.KindGraphClone:
		if g := p.graphs; g != nil && e.Graph() != 0 {
			// The copy's nodes have handles of their own, which no
			// call names.
			g.bindGraph(e.Graph(), g.unnamed(g.graphs[e.SourceGraph()]))
		}
	case gputracebpf.KindGraphKernelNode:
		g := p.graphs
		if g == nil {
			return
		}
		delete(g.adding, e.TID)
		if n := g.own(g.graphs, e.Graph()); n != nil && g.add(n, kernelOf(e)) {
			if len(g.adding) >= maxAdding {
				clear(g.adding) // returns lost
			}
			g.adding[e.TID] = nodeRef{graph: e.Graph(), i: len(n.kernels) - 1}
		}
	case gputracebpf.KindGraphNode:
		if g := p.graphs; g != nil {
			g.named(e.TID, e.Graph(), e.GraphNode())
		}
	case gputracebpf.KindGraphChildNode:
		g := p.graphs
		if g == nil {
			return
		}
		delete(g.adding, e.TID)
		if n := g.own(g.graphs, e.Graph()); n != nil {
			child := g.graphs[e.SourceGraph()]
			if child == nil || child.partial {
				g.forget(n)
				return
			}
			// The embedded copy's nodes have handles of their own.
			at := len(n.kernels)
			if g.add(n, child.kernels...) {
				for i := at; i < len(n.kernels); i++ {
					n.kernels[i].node = 0
				}
			}
		}
	case gputracebpf.KindGraphNodeParams:
		if g := p.graphs; g != nil {
			g.setNode(e.GraphNode(), kernelOf(e))
		}
	case gputracebpf.KindGraphExecNodeParams:
		if g := p.graphs; g != nil {
			g.setExecNode(e.GraphExec(), e.GraphNode(), kernelOf(e))
		}
	case gputracebpf.KindGraphExecUpdate:
		// Made only when the call succeeded: a refused update
		// (cudaErrorGraphExecUpdateFailure) leaves the executable graph
		// as it was. Its kernels are then the graph's (of the same
		// topology), whether the executable graph was known before or
		// not; the node handles of the graph it was made of, which
		// still name its nodes, are not known to pair with them.
		if g := p.graphs; g != nil && e.Ret == 0 && e.GraphExec() != 0 {
			src := g.graphs[e.Graph()]
			if src == nil {
				g.bind(g.execs, e.GraphExec(), nil)
				return
			}
			g.bind(g.execs, e.GraphExec(), g.unnamed(src))
		}
	case gputracebpf.KindGraphDestroy:
		if g := p.graphs; g != nil {
			g.bindGraph(e.Graph(), nil)
		}
	case gputracebpf.KindGraphExecDestroy:
		if g := p.graphs; g != nil {
			g.bind(g.execs, e.GraphExec(), nil)
		}
	}
}

// endCapture ends the capture on stream s, whose end left graph in its
// output (0: the capture failed).
func (g *procGraphs) endCapture(s, graph uint64) {
	c := g.capturing[s]
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
	switch {
	case c.target != 0:
		// Captured into a graph that exists: its kernels go there,
		// or, if the capture failed, that graph lost track of what
		// was added to it.
		n := g.own(g.graphs, c.target)
		if n == nil || n.partial || graph == 0 || c.nodes.partial {
			g.kernels -= len(c.nodes.kernels)
			if n != nil {
				g.forget(n)
			}
			return
		}
		n.kernels = append(n.kernels, c.nodes.kernels...) // held already
	case graph == 0: // the capture failed
		g.kernels -= len(c.nodes.kernels)
	default:
		g.bindGraph(graph, &c.nodes)
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

// bindGraph binds the graph handle to n (bind), a graph other than the
// one it stood for: the nodes that graph named go with it.
func (g *procGraphs) bindGraph(handle uint64, n *graphNodes) {
	if old := g.graphs[handle]; old != nil && old != n {
		for _, k := range old.kernels {
			if r, ok := g.nodes[k.node]; ok && k.node != 0 && r.graph == handle {
				delete(g.nodes, k.node)
			}
		}
	}
	g.bind(g.graphs, handle, n)
}

// own returns the nodes handle stands for in m, for a change to them,
// copied first if another graph or executable graph shares them; nil if
// the handle is not known (made before the agent attached: adding to it
// would make a graph that is short). A copy keeps the node handles: they
// are the same graph's.
func (g *procGraphs) own(m map[uint64]*graphNodes, handle uint64) *graphNodes {
	if g == nil {
		return nil
	}
	n := m[handle]
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
	g.bind(m, handle, mine)
	return mine
}

// unnamed returns a copy of n (nil for nil) whose nodes no call named: a
// clone's, an updated executable graph's.
func (g *procGraphs) unnamed(n *graphNodes) *graphNodes {
	if n == nil {
		return nil
	}
	c := &graphNodes{partial: n.partial}
	if !g.add(c, n.kernels...) {
		return c
	}
	for i := range c.kernels {
		c.kernels[i].node = 0
	}
	return c
}

// add appends kernels to n, which no other graph shares, reporting
// whether it did; past maxGraphKernels n is forgotten instead.
func (g *procGraphs) add(n *graphNodes, kernels ...graphKernel) bool {
	if n.partial {
		return false
	}
	if g.kernels+len(kernels) > maxGraphKernels {
		g.forget(n)
		return false
	}
	n.kernels = append(n.kernels, kernels...)
	g.kernels += len(kernels)
	return true
}

// forget makes n, which no other graph shares, partial: some of its
// kernels are not known, so its replays use none, and it lets go of those
// it held.
func (g *procGraphs) forget(n *graphNodes) {
	g.kernels -= len(n.kernels)
	n.kernels, n.partial = nil, true
}

// named gives the kernel node thread tid is adding to graph its handle,
// from the return of the call that made it.
func (g *procGraphs) named(tid uint32, graph, node uint64) {
	r, ok := g.adding[tid]
	delete(g.adding, tid)
	if !ok || r.graph != graph || node == 0 {
		return
	}
	n := g.graphs[graph]
	if n == nil || r.i >= len(n.kernels) || n.kernels[r.i].node != 0 {
		return
	}
	if len(g.nodes) >= maxGraphKernels {
		g.sweepNodes()
		if len(g.nodes) >= maxGraphKernels {
			return // the node stays unnamed
		}
	}
	if old, ok := g.lookup(node); ok {
		// The handle named another node, whose graph no call
		// destroyed: that name is stale.
		g.graphs[old.graph].kernels[old.i].node = 0
	}
	n.kernels[r.i].node = node
	g.nodes[node] = r
}

// lookup returns where the named kernel node is, if its graph still holds
// it there.
func (g *procGraphs) lookup(node uint64) (nodeRef, bool) {
	r, ok := g.nodes[node]
	if !ok || node == 0 {
		return nodeRef{}, false
	}
	n := g.graphs[r.graph]
	if n == nil || r.i >= len(n.kernels) || n.kernels[r.i].node != node {
		return nodeRef{}, false
	}
	return r, true
}

// sweepNodes lets go of the named nodes whose graphs no longer hold them
// (forgotten, or their handle bound to another graph by a path that kept
// no account).
func (g *procGraphs) sweepNodes() {
	for node := range g.nodes {
		if _, ok := g.lookup(node); !ok {
			delete(g.nodes, node)
		}
	}
}

// setNode gives the graph's kernel node named node the kernel k. A node
// that no call named may be in any graph whose nodes are not all named:
// those are forgotten (their replays count as unknown), as which of them
// changed is not known. Executable graphs already made are not changed.
func (g *procGraphs) setNode(node uint64, k graphKernel) {
	if r, ok := g.lookup(node); ok {
		n := g.own(g.graphs, r.graph)
		if !n.partial {
			k.node = node
			n.kernels[r.i] = k
		}
		return
	}
	var maybe []uint64
	for h, n := range g.graphs {
		for _, kn := range n.kernels {
			if kn.node == 0 {
				maybe = append(maybe, h)
				break
			}
		}
	}
	for _, h := range maybe {
		g.forget(g.own(g.graphs, h))
	}
}

// setExecNode gives the executable graph exec's node named node (by the
// graph it was made of) the kernel k; where that node is not known, which
// of its kernels changed is not, and exec's replays count as unknown.
func (g *procGraphs) setExecNode(exec, node uint64, k graphKernel) {
	n := g.execs[exec]
	if n == nil || n.partial {
		return
	}
	i := -1
	for j := range n.kernels {
		if node != 0 && n.kernels[j].node == node {
			i = j
			break
		}
	}
	n = g.own(g.execs, exec)
	if i < 0 || n.partial {
		g.forget(n)
		return
	}
	k.node = node
	n.kernels[i] = k
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
