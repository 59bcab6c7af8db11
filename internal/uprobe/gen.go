package uprobe

// The generated watch_x86_bpfel.{go,o} and watch_arm64_bpfel.{go,o} are
// committed: importers never need clang. Regenerate with `make generate`
// (clang-19, libbpf-dev, and arm64's kernel headers from
// linux-libc-dev-arm64-cross).
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64 -type watch_event -type watch_what -type watch_flag -type watch_reason -type file_state -type watch_counter -type file_key -type hold -type pattern -type settings watch watch.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/include/x86_64-linux-gnu
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target arm64 -type watch_event -type watch_what -type watch_flag -type watch_reason -type file_state -type watch_counter -type file_key -type hold -type pattern -type settings watch watch.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/aarch64-linux-gnu/include
