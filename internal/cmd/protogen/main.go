// Command protogen generates the Go code of a .proto file, messages and
// gRPC service, reproducibly: protoc (Debian's protobuf-compiler, and the
// well-known types of libprotobuf-dev; scripts/install-test-deps.sh
// installs both) with protoc-gen-go and protoc-gen-go-grpc at the versions
// pinned below, built for the run by go install. The output names the
// versions it was made with, so the same inputs give the same bytes.
//
//	go run ../../cmd/protogen -proto tpu_metric_service.proto
//
// run in the .proto's directory, writes its .pb.go and _grpc.pb.go beside
// it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The plugins' versions. protoc-gen-go is the release of the
// google.golang.org/protobuf module that go.mod requires: its generated
// code needs that runtime.
const (
	protocGenGo     = "google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12"
	protocGenGoGRPC = "google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2"
)

// protocVersion is the protoc the committed code was made with: Debian
// 12's protobuf-compiler. Another writes another version into the
// files' headers, so protogen refuses it rather than make a diff.
const protocVersion = "libprotoc 3.21.12"

func main() {
	proto := flag.String("proto", "", "the .proto file, in the current directory")
	flag.Parse()
	if err := run(*proto); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(proto string) error {
	if proto == "" || filepath.Base(proto) != proto {
		return fmt.Errorf("-proto: a .proto file in the current directory, got %q", proto)
	}
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		return fmt.Errorf("protoc is needed (Debian: protobuf-compiler, libprotobuf-dev; scripts/install-test-deps.sh): %w", err)
	}
	out, err := exec.Command(protoc, "--version").Output()
	if err != nil {
		return fmt.Errorf("protoc --version: %w", err)
	}
	if v := strings.TrimSpace(string(out)); v != protocVersion {
		return fmt.Errorf("protoc is %q; the committed code was made with %q (Debian 12's protobuf-compiler)", v, protocVersion)
	}
	bin, err := os.MkdirTemp("", "protogen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	for _, pkg := range []string{protocGenGo, protocGenGoGRPC} {
		cmd := exec.Command("go", "install", pkg)
		cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go install %s: %w", pkg, err)
		}
	}
	cmd := exec.Command(protoc,
		"--plugin=protoc-gen-go="+filepath.Join(bin, "protoc-gen-go"),
		"--plugin=protoc-gen-go-grpc="+filepath.Join(bin, "protoc-gen-go-grpc"),
		"--go_out=.", "--go_opt=paths=source_relative",
		"--go-grpc_out=.", "--go-grpc_opt=paths=source_relative",
		"-I", ".", proto)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("protoc: %w", err)
	}
	return nil
}
