package top

import (
	"github.com/xpuscope/xpuscope/semconv"
)

// The labels top reads, each a semconv attribute's.
var (
	lHWID, lHWName, lHWVendor, lHWParent = promLabel(semconv.HWID), promLabel(semconv.HWName), promLabel(semconv.HWVendor), promLabel(semconv.HWParent)
	lGPUIndex, lMIGProfile, lTask        = promLabel(semconv.GPUIndex), promLabel(semconv.GPUMIGProfile), promLabel(semconv.HWGPUTask)
	lClockDomain, lThrottleReason        = promLabel(semconv.GPUClockDomain), promLabel(semconv.GPUClockThrottleReason)
	lDirection                           = promLabel(semconv.NetworkIODir)

	lPID, lExe, lService         = promLabel(semconv.ProcessPID), promLabel(semconv.ProcessExecutableName), promLabel(semconv.ServiceName)
	lPod, lNamespace, lContainer = promLabel(semconv.K8sPodName), promLabel(semconv.K8sNamespaceName), promLabel(semconv.K8sContainerName)
	lContainerID                 = promLabel(semconv.ContainerID)
	lKernel, lMemcpyKind         = promLabel(semconv.CUDAKernelName), promLabel(semconv.CUDAMemcpyKind)
	lProvider, lRequestModel     = promLabel(semconv.GenAIProviderName), promLabel(semconv.GenAIRequestModel)
	lResponseModel, lTokenType   = promLabel(semconv.GenAIResponseModel), promLabel(semconv.GenAITokenType)
	lServerAddress, lServerPort  = promLabel(semconv.ServerAddress), promLabel(semconv.ServerPort)
	lErrorType                   = promLabel(semconv.ErrorType)
	lFeature, lFeatureState      = promLabel(semconv.XpuscopeFeature), promLabel(semconv.XpuscopeFeatureState)
	lFeatureReason               = promLabel(semconv.XpuscopeFeatureReason)
)

// famHandler reads the series of one family.
type famHandler struct {
	id   int
	kind semconv.Kind
	fn   func(*builder, *series)
}

// handlers are the families top reads, by their Prometheus names.
var handlers = map[string]famHandler{}

func handle(m semconv.Metric, fn func(*builder, *series)) {
	name := promName(m)
	if _, dup := handlers[name]; dup {
		panic("top: two handlers of " + m.Name)
	}
	handlers[name] = famHandler{id: len(handlers), kind: m.Kind, fn: fn}
}

// alarmDef is a self-metric (a counter) that raises an alarm in the
// status line while it goes up.
type alarmDef struct {
	title  string
	metric semconv.Metric
	// errorsOnly counts only the series with an error.type (the serving
	// Source's scrapes count every scrape, failed or not).
	errorsOnly bool
}

// alarms are the self-metrics of drops, overflows and failures.
var alarms = []alarmDef{
	{"cuda drops", semconv.XpuscopeCUDAEventsDropped, false},
	{"llm drops", semconv.XpuscopeGenAICaptureDropped, false},
	{"ring errors", semconv.XpuscopeBPFRingErrors, false},
	{"export failures", semconv.XpuscopeAgentExportFailures, false},
	{"gpu read errors", semconv.XpuscopeGPUReadErrors, false},
	{"process overflow", semconv.XpuscopeCUDAProcessOverflow, false},
	{"kernel overflow", semconv.XpuscopeCUDAKernelNamesOverflow, false},
	{"gpu process overflow", semconv.XpuscopeGPUProcessOverflow, false},
	{"occupancy drops", semconv.XpuscopeOccupancyDropped, false},
	{"server overflow", semconv.XpuscopeGenAIServingOverflow, false},
	{"server scrape errors", semconv.XpuscopeGenAIServingScrapes, true},
	{"kubelet errors", semconv.XpuscopePodjoinKubeletErrors, false},
	{"nccl inspector errors", semconv.XpuscopeNCCLInspectorErrors, false},
	{"training read errors", semconv.XpuscopeTrainingReadErrors, false},
	{"training overflow", semconv.XpuscopeTrainingOverflow, false},
	{"pmu read errors", semconv.XpuscopePMUReadErrors, false},
	{"intelpt lost", semconv.XpuscopeIntelPTLost, false},
}

// memcpyDirection is the Memcpy slot of a copy kind.
func memcpyDirection(kind string) int {
	switch kind {
	case semconv.MemcpyHostToDevice:
		return H2D
	case semconv.MemcpyDeviceToHost:
		return D2H
	case semconv.MemcpyDeviceToDevice:
		return D2D
	}
	return OtherCopy
}

func init() {
	// GPUs (package gpu).
	handle(semconv.HWGPUUtilization, func(b *builder, s *series) {
		if t := s.get(lTask); t == "" || t == semconv.GPUTaskGeneral {
			b.gpu(s).row.Util = s.value
		}
	})
	handle(semconv.HWGPUMemoryUsage, func(b *builder, s *series) { b.gpu(s).row.MemUsed = s.value })
	handle(semconv.HWGPUMemoryLimit, func(b *builder, s *series) { b.gpu(s).row.MemTotal = s.value })
	handle(semconv.HWPower, func(b *builder, s *series) { b.gpu(s).row.Power = s.value })
	handle(semconv.GPUPowerLimit, func(b *builder, s *series) { b.gpu(s).row.PowerLimit = s.value })
	handle(semconv.HWTemperature, func(b *builder, s *series) { maxNaN(&b.gpu(s).row.Temp, s.value) })
	handle(semconv.GPUFanSpeed, func(b *builder, s *series) { b.gpu(s).row.Fan = s.value })
	handle(semconv.GPUClockFrequency, func(b *builder, s *series) {
		switch s.get(lClockDomain) {
		case semconv.ClockDomainSM:
			b.gpu(s).row.SMClock = s.value
		case semconv.ClockDomainMemory:
			b.gpu(s).row.MemClock = s.value
		}
	})
	handle(semconv.GPUClockThrottle, func(b *builder, s *series) {
		g := b.gpu(s)
		if s.value == 1 {
			g.throttle = append(g.throttle, b.intern(s.get(lThrottleReason)))
		}
	})
	handle(semconv.HWGPUIO, func(b *builder, s *series) {
		r := b.rate(s)
		g := b.gpu(s)
		switch s.get(lDirection) {
		case semconv.DirectionReceive:
			addNaN(&g.row.RxRate, r)
		case semconv.DirectionTransmit:
			addNaN(&g.row.TxRate, r)
		}
	})

	// Processes (gpu's per-process series; cudatrace, hiptrace and the
	// occupancy model).
	handle(semconv.ProcessGPUMemoryUsage, func(b *builder, s *series) {
		p := b.proc(s)
		addNaN(&p.row.GPUMem, s.value)
		dev := s.get(lGPUIndex)
		if dev == "" {
			dev = s.get(lHWID)
		}
		for _, d := range p.gpus {
			if d == dev {
				return
			}
		}
		p.gpus = append(p.gpus, b.intern(dev))
	})
	handle(semconv.ProcessGPUUtilization, func(b *builder, s *series) { maxNaN(&b.proc(s).row.SMUtil, s.value) })
	handle(semconv.ProcessGPUSMActiveRatio, func(b *builder, s *series) { maxNaN(&b.proc(s).row.ModelSM, s.value) })
	handle(semconv.ProcessGPUThreadUtilization, func(b *builder, s *series) { maxNaN(&b.proc(s).row.ModelThreads, s.value) })
	handle(semconv.CUDAKernelLaunches, func(b *builder, s *series) {
		r := b.rate(s)
		p := b.proc(s)
		addNaN(&p.row.Launches, r)
		name := s.get(lKernel)
		i, ok := p.kernelIndex[name]
		if !ok {
			if p.kernelIndex == nil {
				p.kernelIndex = map[string]int{}
			}
			name = b.intern(name)
			i = len(p.row.Kernels)
			p.kernelIndex[name] = i
			p.row.Kernels = append(p.row.Kernels, KernelRow{Name: name, Rate: nan})
		}
		k := &p.row.Kernels[i]
		addNaN(&k.Rate, r)
		k.Total += s.value
	})
	handle(semconv.CUDAGraphLaunches, func(b *builder, s *series) { addNaN(&b.proc(s).row.GraphLaunches, b.rate(s)) })
	handle(semconv.CUDAMemcpyTransferred, func(b *builder, s *series) {
		r := b.rate(s)
		addNaN(&b.proc(s).row.Memcpy[memcpyDirection(s.get(lMemcpyKind))], r)
	})
	handle(semconv.CUDAMemoryOutstanding, func(b *builder, s *series) { addNaN(&b.proc(s).row.Outstanding, s.value) })
	handle(semconv.CUDAMemoryOldestAge, func(b *builder, s *series) { maxNaN(&b.proc(s).row.OldestAge, s.value) })
	handle(semconv.CUDAAPIErrors, func(b *builder, s *series) {
		r := b.rate(s)
		p := b.proc(s)
		addNaN(&p.row.Errors, r)
		addNaN(&p.row.ErrorsTotal, s.value)
	})
	exeHist := func(m semconv.Metric, acc func(*exeAcc) *histAcc) {
		handle(m, func(b *builder, s *series) {
			if bounds, d, ok := b.delta(s); ok {
				acc(b.exe(s)).add(bounds, d)
			}
		})
	}
	exeHist(semconv.CUDAKernelGridSize, func(e *exeAcc) *histAcc { return &e.grid })
	exeHist(semconv.CUDAKernelBlockSize, func(e *exeAcc) *histAcc { return &e.block })
	exeHist(semconv.CUDAKernelSharedMemory, func(e *exeAcc) *histAcc { return &e.shared })
	exeHist(semconv.CUDASyncDuration, func(e *exeAcc) *histAcc { return &e.sync })

	// LLM calls (the genai capture's client side).
	handle(semconv.GenAIClientOperationDuration, func(b *builder, s *series) {
		bounds, d, ok := b.delta(s)
		a := b.llmRow(s)
		if !ok {
			return
		}
		a.duration.add(bounds, d)
		var n float64
		for _, c := range d {
			n += c
		}
		a.calls += n
		if s.get(lErrorType) != "" {
			a.errs += n
		}
	})
	handle(semconv.GenAIClientOperationTimeToFirstChunk, func(b *builder, s *series) {
		bounds, d, ok := b.delta(s)
		a := b.llmRow(s)
		if ok {
			a.ttft.add(bounds, d)
		}
	})
	handle(semconv.GenAIClientTokenUsage, func(b *builder, s *series) {
		b.delta(s) // keeps the buckets' state like any histogram's
		r := b.sumRate(s)
		a := b.llmRow(s)
		switch s.get(lTokenType) {
		case semconv.GenAITokenTypeInput:
			a.tokIn += r
		case semconv.GenAITokenTypeOutput:
			a.tokOut += r
		}
	})
	handle(semconv.XpuscopeGenAICost, func(b *builder, s *series) {
		r := b.rate(s)
		a := b.llmRow(s)
		a.cost += r
		a.costSeen = true
	})
	handle(semconv.XpuscopeGenAIClientWaitingRequests, func(b *builder, s *series) {
		a := b.llmRow(s)
		a.row.Waiting += s.value
		a.waited = true
	})

	// Model servers (genai/serving; the capture's server side).
	handle(semconv.XpuscopeGenAIServerWaitingRequests, func(b *builder, s *series) { addNaN(&b.serverRow(s).row.Waiting, s.value) })
	handle(semconv.XpuscopeGenAIServerRunningRequests, func(b *builder, s *series) { addNaN(&b.serverRow(s).row.Running, s.value) })
	handle(semconv.XpuscopeGenAIServerKVCacheUtilization, func(b *builder, s *series) { maxNaN(&b.serverRow(s).row.KVCache, s.value) })
	handle(semconv.XpuscopeGenAIServerKVCacheCapacity, func(b *builder, s *series) { addNaN(&b.serverRow(s).row.KVCapacity, s.value) })
	handle(semconv.XpuscopeGenAIServerTokens, func(b *builder, s *series) {
		r := b.rate(s)
		a := b.serverRow(s)
		switch s.get(lTokenType) {
		case semconv.GenAITokenTypeInput:
			addNaN(&a.row.TokensIn, r)
		case semconv.GenAITokenTypeOutput:
			addNaN(&a.row.TokensOut, r)
		}
	})
	handle(semconv.XpuscopeGenAIServerRequests, func(b *builder, s *series) {
		r := b.rate(s)
		a := b.serverRow(s)
		addNaN(&a.row.Requests, r)
		if s.get(lErrorType) != "" {
			addNaN(&a.row.Errors, r)
		} else {
			addNaN(&a.row.Errors, 0*r)
		}
	})
	handle(semconv.XpuscopeGenAIServerPreemptions, func(b *builder, s *series) { addNaN(&b.serverRow(s).row.Preemptions, b.rate(s)) })
	serverHist := func(m semconv.Metric, acc func(*serverAcc) *histAcc) {
		handle(m, func(b *builder, s *series) {
			bounds, d, ok := b.delta(s)
			a := b.serverRow(s)
			if ok {
				acc(a).add(bounds, d)
			}
		})
	}
	serverHist(semconv.GenAIServerTimeToFirstToken, func(a *serverAcc) *histAcc { return &a.ttft })
	serverHist(semconv.GenAIServerRequestDuration, func(a *serverAcc) *histAcc { return &a.request })
	serverHist(semconv.XpuscopeGenAIServerQueueDuration, func(a *serverAcc) *histAcc { return &a.queue })
	handle(semconv.XpuscopeGenAIServerProcesses, func(b *builder, s *series) {
		pid := parsePID(s.get(lPID))
		if pid == 0 || s.value == 0 {
			return
		}
		k := serverProcKey{s.get(lProvider), s.get(lServerPort)}
		pids, ok := b.servPIDs[k]
		if !ok {
			k = serverProcKey{b.intern(k.kind), b.intern(k.port)}
		}
		b.servPIDs[k] = append(pids, pid)
	})

	// The agent's features.
	handle(semconv.XpuscopeAgentFeatureState, func(b *builder, s *series) {
		if s.value == 1 {
			b.features = append(b.features, Feature{Name: b.intern(s.get(lFeature)), State: b.intern(s.get(lFeatureState)),
				Reason: b.intern(s.get(lFeatureReason))})
		}
	})

	for i, a := range alarms {
		handle(a.metric, func(b *builder, s *series) {
			r := b.rate(s)
			if a.errorsOnly && s.get(lErrorType) == "" {
				return
			}
			acc := &b.alarms[i]
			acc.seen = true
			addNaN(&acc.rate, r)
			acc.total += s.value
		})
	}
}
