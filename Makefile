# Pixir — build, test, lint, benchmark. `make demo` and `make check` are the
# README's two commands.

GO              ?= go
BIN             := bin/pixir
TOOLS           := $(CURDIR)/.tools
GOLANGCI_LINT   := $(TOOLS)/golangci-lint
GOLANGCI_VERSION:= v2.15.0
BENCHTIME       ?= 50x

.PHONY: all build demo check test gotest lint conformance bench tools clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/pixir

# Build and run a short scripted session through a real ACP client (offline).
demo: build
	./$(BIN) demo

# Everything CI runs: lint, the Go tests with the race detector, and the
# ACP conformance suite driven by the official TypeScript client.
check: lint gotest conformance

test: gotest conformance

gotest:
	$(GO) test -race -count=1 ./...

lint: $(GOLANGCI_LINT)
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

tools: $(GOLANGCI_LINT)

conformance: build
	cd conformance && npm ci --no-audit --no-fund --loglevel=error
	cd conformance && PIXIR_BIN=$(CURDIR)/$(BIN) npm test

# Benchmarks; figures go into the closing notes and docs.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

clean:
	rm -rf bin .tools conformance/node_modules
