GO ?= go
# go-nvml's header marks old NVML calls deprecated; cgo would warn on each.
export CGO_ENABLED := 1
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations

.PHONY: run test deps vet unit generate bench agent gpu-binaries fuzz

## run: the reference agent with defaults (ARGS="-check", ARGS="-duration 10s", …)
run:
	$(GO) run ./examples/agent $(ARGS)

## test: install what the tests need, then vet and run every test
test: deps vet unit

deps:
	scripts/install-test-deps.sh

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

## generate: regenerate docs/metrics.md (and, later, BPF objects)
generate:
	$(GO) generate ./...

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
