package gputracebpf

// The generated gputrace_x86_bpfel.{go,o} and gputrace_arm64_bpfel.{go,o} are
// committed: importers never need clang. Regenerate with `make generate`
// (clang-19, libbpf-dev, and arm64's kernel headers from
// linux-libc-dev-arm64-cross).
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64 -type event -type name_event -type wide_event -type kind -type api -type counter -type call_key gputrace gputrace.bpf.c -- -O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu
//
// The arm64 object is built with -mcpu=v3: it publishes a lane's record
// with a 32-bit atomic exchange (bpfsource's lanes.bpf.h, LANE_PUBLISH),
// which needs v3's 32-bit atomics (Linux 5.12+; the code needs 5.15). The
// x86-64 object publishes with a plain store and keeps its instructions.
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target arm64 -type event -type name_event -type wide_event -type kind -type api -type counter -type call_key gputrace gputrace.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/aarch64-linux-gnu/include
