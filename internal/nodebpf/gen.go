package nodebpf

// The generated node_x86_bpfel.{go,o} and node_arm64_bpfel.{go,o} are
// committed: importers never need clang. Regenerate with `make generate`
// (clang-19, libbpf-dev, and arm64's kernel headers from
// linux-libc-dev-arm64-cross).
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64 -type record_kind -type tcp_event -type role -type format -type counter -type tcp_record -type open_record -type file_key -type file_stats -type proc_stats -type file_proc_key -type retransmit_times -type mapping node node.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/include/x86_64-linux-gnu
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target arm64 -type record_kind -type tcp_event -type role -type format -type counter -type tcp_record -type open_record -type file_key -type file_stats -type proc_stats -type file_proc_key -type retransmit_times -type mapping node node.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/aarch64-linux-gnu/include
