#!/usr/bin/env bash
# The arm64 checks, on an x86-64 machine (Grace Hopper, Grace Blackwell
# and Graviton GPU nodes run arm64).
#
#   scripts/test-arm64.sh        make check-arm64, the quick tier:
#     1. the library and the agent built for GOARCH=arm64 with cgo
#        (go-nvml's NVML bindings need it), by Debian's cross compiler;
#     2. every package that does not import go-nvml built without cgo
#        (the purego paths: ROCm SMI, AMD SMI, DCGM, RDC, Level Zero);
#     3. go vet for arm64 of the packages whose files differ by
#        architecture (the BPF objects' bindings, probe placement) and of
#        those that describe it (bpfsource, the agent): the rest are the
#        same code as x86-64's, which make vet vets;
#     4. those packages' tests as arm64 binaries under QEMU's user-mode
#        emulator (scripts/qemu-aarch64, go test -exec), so that arm64's
#        code paths run, not only compile: probe placement decoded with
#        arm64asm, the arm64 objects' structure and argument registers,
#        the calling-convention interpreter, the agent's platform line.
#        The tests that need this machine's own kernel, libraries or
#        programs skip there (testutil.Native); they run in the native
#        suite, where a skip in CI is a failure.
#
#   scripts/test-arm64.sh all    make test-arm64, the tier `make test`
#     runs: the same, with go vet of every package and every package's
#     tests under QEMU (the pure ones run; a few minutes more).
#
# Each step's time is printed, for the CI budget. scripts/install-test-deps.sh
# installs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
if [ "$("$GO" env GOHOSTARCH)" = arm64 ]; then
	echo "test-arm64: this machine is arm64: the native suite is arm64's (scripts/arm64-validate.sh)"
	exit 0
fi
export GOARCH=arm64 CC=aarch64-linux-gnu-gcc
export CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations}

# The packages whose arm64 code differs from x86-64's, or says what it is.
arch=(./internal/uprobe ./internal/gputracebpf ./internal/httpbpf ./internal/nodebpf ./internal/bpfsource
	./internal/testutil/bpfregs ./internal/testutil/cabi)
vet=("${arch[@]}" ./examples/agent)
tests=("${arch[@]}")
# Left to the full run, for time: TestPclntabAgreesWithGosym (44 s under
# QEMU here; the native suite reads arm64 and x86-64 builds of every Go
# release with the same pure Go code), and TestLanesModel (19 s; a model
# of the lanes' protocol in Go, which emulation does not make arm64's
# memory model).
skip='^(TestPclntabAgreesWithGosym|TestLanesModel)$'
if [ "${1:-}" = all ]; then
	vet=(./...)
	tests=(./...)
	skip='^$'
fi

step() {
	local name=$1
	shift
	local start=$SECONDS
	"$@"
	echo "test-arm64: $name: $((SECONDS - start)) s"
}

step "build (cgo)" env CGO_ENABLED=1 "$GO" build ./...
# The packages that import go-nvml need cgo; the rest build without it.
nocgo=$(CGO_ENABLED=0 "$GO" list -f '{{$nvml := false}}{{range .Deps}}{{if eq . "github.com/NVIDIA/go-nvml/pkg/nvml"}}{{$nvml = true}}{{end}}{{end}}{{if and (not $nvml) .GoFiles}}{{.ImportPath}}{{end}}' ./...)
# shellcheck disable=SC2086
step "build (no cgo)" env CGO_ENABLED=0 "$GO" build $nocgo
step "vet" env CGO_ENABLED=1 "$GO" vet "${vet[@]}"
step "tests under qemu-aarch64" env CGO_ENABLED=1 "$GO" test -count=1 -timeout 20m -exec "$PWD/scripts/qemu-aarch64" -skip "$skip" "${tests[@]}"
if [ "${1:-}" != all ]; then
	# The agent's -check names arm64's conventions (its test binary is
	# the agent's size: only this test of it runs).
	step "agent's platform line under qemu-aarch64" env CGO_ENABLED=1 "$GO" test -count=1 -exec "$PWD/scripts/qemu-aarch64" \
		-run '^TestCheckSaysThePlatform$' ./examples/agent
fi
