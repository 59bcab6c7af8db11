package httpbpf

// The generated capture_x86_bpfel.{go,o} and capture_arm64_bpfel.{go,o} are
// committed: importers never need clang. Regenerate with `make generate`
// (clang-19, libbpf-dev, and arm64's kernel headers from
// linux-libc-dev-arm64-cross).
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target amd64 -type record_header -type record_kind -type source -type direction -type counter -type tls_api -type go_tls_api -type conn_key -type conn_state -type find_socket -type conn -type key_label -type key_record capture capture.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/include/x86_64-linux-gnu
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -target arm64 -type record_header -type record_kind -type source -type direction -type counter -type tls_api -type go_tls_api -type conn_key -type conn_state -type find_socket -type conn -type key_label -type key_record capture capture.bpf.c -- -O2 -g -mcpu=v3 -Wall -Werror -I/usr/aarch64-linux-gnu/include
