package ncclinspector

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The only environment variables read of a process: what loads the
// Inspector and where it writes. Every other variable of the environment
// block is skipped unread past its name.
const (
	EnvPlugin   = "NCCL_PROFILER_PLUGIN"
	EnvEnable   = "NCCL_INSPECTOR_ENABLE"
	EnvDumpDir  = "NCCL_INSPECTOR_DUMP_DIR"
	EnvPromDump = "NCCL_INSPECTOR_PROM_DUMP"
	EnvJobID    = "SLURM_JOBID"
)

var envNames = [...]string{EnvPlugin, EnvEnable, EnvDumpDir, EnvPromDump, EnvJobID}

// Env holds the allowed variables of a process's environment.
type Env map[string]string

// Environment reading bounds: what is read of an environment block, and
// the longest entry kept (a path).
const (
	MaxEnviron  = 1 << 20
	maxEnvEntry = 4096
)

// ReadEnv reads the allowed variables from an environment block
// (/proc/<pid>/environ: NAME=value entries each ended by a NUL; a last
// one without its NUL counts too), at most MaxEnviron bytes of it. An
// entry longer than 4096 bytes is skipped whole, up to its NUL. The
// buffer the block passes through is zeroed before ReadEnv returns: no
// other variable outlives the call.
func ReadEnv(r io.Reader) (Env, error) {
	buf := make([]byte, 2*maxEnvEntry)
	defer clear(buf)
	env := Env{}
	take := func(e []byte) {
		for _, name := range envNames {
			if len(e) > len(name) && e[len(name)] == '=' && string(e[:len(name)]) == name {
				env[name] = string(e[len(name)+1:])
			}
		}
	}
	r = io.LimitReader(r, MaxEnviron)
	held := 0         // the start of an entry, kept from the last read
	skipping := false // in an entry too long to keep: up to its NUL
	for empty := 0; ; {
		n, err := r.Read(buf[held:])
		if n == 0 && err == nil {
			if empty++; empty > 100 {
				return env, fmt.Errorf("ncclinspector: read the environment: %w", io.ErrNoProgress)
			}
			continue
		}
		empty = 0
		data := buf[:held+n]
		i := 0
		for {
			j := bytes.IndexByte(data[i:], 0)
			if j < 0 {
				break
			}
			if !skipping && j <= maxEnvEntry {
				take(data[i : i+j])
			}
			skipping = false
			i += j + 1
		}
		held = copy(buf, data[i:])
		clear(buf[held:len(data)])
		if held > maxEnvEntry {
			held, skipping = 0, true
			clear(buf)
		}
		if err == io.EOF {
			if held > 0 && !skipping {
				take(buf[:held])
			}
			return env, nil
		}
		if err != nil {
			return env, fmt.Errorf("ncclinspector: read the environment: %w", err)
		}
	}
}

// Output is what a process's Inspector writes.
type Output int

// The Inspector's outputs.
const (
	// None: the process does not load the Inspector.
	None Output = iota
	// JSON: a line of JSON per operation, to a file of the process's
	// own, the one read.
	JSON
	// Prometheus: per-GPU textfiles for node_exporter, rewritten whole
	// once an interval, held open by the process (see the package's
	// doc).
	Prometheus
)

func (o Output) String() string {
	switch o {
	case JSON:
		return "json"
	case Prometheus:
		return "prometheus"
	}
	return "none"
}

// Locate says what the Inspector of a process with env writes, and in
// which directory, as the Inspector decides it: NCCL_INSPECTOR_DUMP_DIR,
// else nccl-inspector-<SLURM_JOBID> (its leading integer, as strtol reads
// it), else nccl-inspector-unknown-jobid. A relative directory is the
// process's working directory's.
func Locate(env Env) (Output, string) {
	if env[EnvPlugin] == "" || !enabled(env[EnvEnable]) {
		return None, ""
	}
	dir := env[EnvDumpDir]
	if dir == "" {
		dir = "nccl-inspector-unknown-jobid"
		if id, ok := strtol(env[EnvJobID]); ok {
			dir = fmt.Sprintf("nccl-inspector-%d", id)
		}
	}
	if enabled(env[EnvPromDump]) {
		return Prometheus, dir
	}
	return JSON, dir
}

// enabled is the Inspector's reading of a 0/1 variable: an integer, not 0.
func enabled(v string) bool {
	n, ok := strtol(v)
	return ok && n != 0
}

// strtol reads an integer as C's (int)strtol(s, NULL, 10) does (the
// Inspector's reading of SLURM_JOBID, and atoi's of its 0/1 switches): it
// skips leading white space, takes a sign and the digits that follow, and
// ignores the rest; a long is cut to an int. ok is false where strtol
// sets errno (past a long) or s is unset. A string with no digit is 0,
// as strtol makes it.
func strtol(s string) (int32, bool) {
	if s == "" {
		return 0, false
	}
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	n := 0
	if n < len(s) && (s[n] == '+' || s[n] == '-') {
		n++
	}
	digits := n
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == digits {
		return 0, true
	}
	v, err := strconv.ParseInt(s[:n], 10, 64)
	if err != nil {
		return 0, false // ERANGE
	}
	return int32(v), true
}
