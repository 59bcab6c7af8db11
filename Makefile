GO ?= go
# go-nvml's header marks old NVML calls deprecated; cgo would warn on each.
export CGO_ENABLED := 1
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations

.PHONY: run test deps vet unit check-arm64 test-arm64 generate check-generate bench agent gpu-binaries fuzz

## run: the reference agent with defaults (ARGS="-check", ARGS="-duration 10s", …)
run:
	$(GO) run ./examples/agent $(ARGS)

## test: install what the tests need, then vet, check generated files, run every test, and the arm64 checks
test: deps vet check-generate unit test-arm64

deps:
	scripts/install-test-deps.sh

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

## check-arm64: the quick arm64 tier, for work on arm64 code: build for arm64 (cgo by the cross compiler, and without cgo), vet and run under qemu-user the packages whose arm64 code differs
check-arm64:
	GO=$(GO) scripts/test-arm64.sh

## test-arm64: check-arm64 with vet of every package and every package's pure tests as arm64 binaries under qemu-user (part of make test)
test-arm64:
	GO=$(GO) scripts/test-arm64.sh all

## generate: regenerate docs/metrics.md and the BPF objects (clang-19, libbpf-dev)
generate:
	$(GO) generate ./...

## check-generate: go generate must reproduce the committed files exactly
GENERATED := '*_bpfel.go' '*_bpfel.o' '*_gen.go' '*_gen_test.go' '*.pb.go' docs/metrics.md
check-generate: generate
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		git status --short -- $(GENERATED); \
		echo "go generate changed the files above: commit what make generate writes" >&2; exit 1; \
	fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

agent:
	$(GO) build -o bin/agent ./examples/agent

## gpu-binaries: what scripts/gpu-validate.sh runs on a GPU machine
gpu-binaries: agent
	$(GO) test -c -tags gpu -o bin/gpu.test ./gpu

## fuzz: run each fuzz target for FUZZTIME (the seeds run in every go test)
FUZZTIME ?= 30s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "$$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done
