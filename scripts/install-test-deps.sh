#!/usr/bin/env bash
# Installs what the tests need, idempotently: Debian's contrib and non-free
# components (the NVIDIA user-space libraries live there) and the packages
# below, without recommends (which keeps kernel-module packages out).
set -euo pipefail

packages=(
	gcc libc6-dev             # cgo, and the C programs and fake libraries the tests build
	libnvidia-ml1             # the real NVML library (driver 535), GPU-less here
	librocm-smi64-1           # the real ROCm SMI library (5.2, /usr/lib), GPU-less here: rsmi_init fails with 8
	libze1 libze-dev          # the real Level Zero loader (1.8.12), driverless here: zeInit fails with 0x78000001; its v1.4 headers build the fake driver
	libcudart11.0 libcuda1    # the real CUDA 11.8 runtime and driver 535 API, probed by cudatrace
	libamdhip64-5             # the real HIP runtime (5.2), GPU-less here: probed by hiptrace
	clang-19 llvm-19 libbpf-dev  # make check-generate: rebuild the BPF objects and compare
	util-linux                # unshare, for the mount-namespace test; nsenter, for netlab
	iproute2 nftables         # netlab: a veth pair between two network namespaces, and the random-drop rule of its lossy link (nftables numgen; the kernel has no netem)
	curl libssl3 python3      # real HTTPS clients on the system OpenSSL, for the genai capture
	openssl                   # s_server with a key log and real key updates, the TLS decryption's other peer
	libssl-dev                # OpenSSL's static archives: a client with OpenSSL linked in, as Node has
	prometheus                # promtool for deploy/prometheus/rules.yml, and the server the agent's end-to-end test scrapes with
	protobuf-compiler libprotobuf-dev  # make check-generate: protoc 3.21.12 and the well-known types, for the TPU runtime's gRPC code
	libipt2                   # Intel's Intel PT library: the optional decode step of intelpt's captures (internal/cmd/ptdecode) and its test's synthetic trace
	tmux                      # the real terminal agent top is driven in (send-keys, capture-pane)
)
# The other architecture's C compiler (the calling-convention tests compile
# callers for both), and on x86-64 what make test-arm64 needs: the arm64
# build with cgo, and QEMU to run the arm64 test binaries (no binfmt:
# scripts/qemu-aarch64).
case "$(dpkg --print-architecture)" in
amd64) packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user) ;;
arm64) packages+=(gcc-x86-64-linux-gnu libc6-dev-amd64-cross) ;;
esac

# The Go releases the tests build Go programs with beside the machine's
# own, so that the last three releases are covered (the genai capture of
# crypto/tls; testutil.OtherGoReleases lists the same): the go command
# takes each from the Go module proxy as it takes a module.
for release in go1.25.14 go1.27.4; do
	GOTOOLCHAIN=$release "${GO:-go}" version >/dev/null
done

# tracefs where a node's systemd mounts it: the genai capture's plaintext
# programs attach to the system calls' own tracepoints, which tracefs
# names (without it they fall back to the raw ones, which the tests try
# too).
if [ "$(id -u)" -eq 0 ] && ! mountpoint -q /sys/kernel/tracing; then
	mount -t tracefs tracefs /sys/kernel/tracing
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "test dependencies: all installed"
	exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi

# Enable contrib, non-free and non-free-firmware next to main, in either
# source format.
deb822=/etc/apt/sources.list.d/debian.sources
if [ -f "$deb822" ]; then
	"${sudo[@]}" sed -i -E '/^Components:/{/non-free( |$)/!s/^Components:.*$/Components: main contrib non-free non-free-firmware/}' "$deb822"
fi
if [ -f /etc/apt/sources.list ]; then
	"${sudo[@]}" sed -i -E '/^deb .*debian/{/non-free( |$)/!s/ main( |$)/ main contrib non-free non-free-firmware\1/}' /etc/apt/sources.list
fi

echo "test dependencies: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
