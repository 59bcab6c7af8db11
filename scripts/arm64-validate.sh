#!/usr/bin/env bash
# Tier-4 checks on an arm64 machine (Grace Hopper, Grace Blackwell,
# Graviton), never in CI. CI runs on x86-64: it builds for arm64, runs the
# pure tests as arm64 binaries under QEMU, checks every probe's argument
# reading against aarch64-linux-gnu-gcc's calls and the arm64 BPF objects'
# shape against the x86-64 ones (make test-arm64, docs/testing.md). What
# only an arm64 kernel shows is run here: the arm64 objects pass its
# verifier, and their probes fire, at the places arm64's placement rules
# choose, with the arguments the calling-convention test says (the kernel
# tier of the eBPF packages, CI set, so that a skip is a failure); then
# the agent's -check, and on a GPU node scripts/gpu-validate.sh.
#
# Needs root, Go, and scripts/install-test-deps.sh's packages (on arm64 it
# installs x86-64's cross compiler, for the calling-convention tests, and
# no QEMU). The report goes to $OUT/arm64-validation.txt when OUT is set,
# else to stdout.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -m)" != aarch64 ]; then
	echo "arm64-validate: this machine is $(uname -m), not arm64" >&2
	exit 2
fi
out=${OUT:+$OUT/arm64-validation.txt}
exec > >(tee ${out:+"$out"}) 2>&1

echo "# arm64 validation: $(uname -r), $(go version)"
export CI=1 CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}
rc=0
go test -race -count=1 ./internal/uprobe ./internal/gputracebpf ./internal/httpbpf ./internal/bpfsource \
	./internal/gputrace ./cudatrace ./hiptrace ./genai ./examples/agent || rc=1
go run ./examples/agent -check || rc=1
if command -v nvidia-smi >/dev/null; then
	scripts/gpu-validate.sh || rc=1
fi
exit $rc
