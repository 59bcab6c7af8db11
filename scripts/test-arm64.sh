#!/usr/bin/env bash
# The arm64 checks of `make test`, on an x86-64 machine (Grace Hopper,
# Grace Blackwell and Graviton GPU nodes run arm64):
#
#   1. the library and the agent built for GOARCH=arm64 with cgo (go-nvml's
#      NVML bindings need it), by Debian's cross compiler;
#   2. every package that does not import go-nvml built without cgo (the
#      purego paths: ROCm SMI, AMD SMI, Level Zero);
#   3. go vet for arm64;
#   4. every test run as an arm64 binary under QEMU's user-mode emulator
#      (scripts/qemu-aarch64, go test -exec), so that arm64's code paths
#      run, not only compile. The tests that need this machine's own
#      kernel, libraries or programs skip there (testutil.Native); they
#      run in the native suite. What is left are the pure tests: decoders,
#      parsers, models, probe placement, the calling conventions.
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
step "vet" env CGO_ENABLED=1 "$GO" vet ./...
step "tests under qemu-aarch64" env CGO_ENABLED=1 "$GO" test -count=1 -timeout 20m -exec "$PWD/scripts/qemu-aarch64" ./...
