package tpu

import (
	"slices"
	"strconv"
	"strings"
)

// maxPorts bounds the ports one workload's variable may name.
const maxPorts = 64

// ParsePorts reads TPU_RUNTIME_METRICS_PORTS as libtpu takes it: ports
// separated by commas (spaces around each allowed). What is not a port
// (1 … 65535) is skipped; each port is listed once, in order; at most 64.
func ParsePorts(s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 || p > 65535 || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
		if len(out) == maxPorts {
			break
		}
	}
	return out
}
