# Pixir — build, test, lint, benchmark. `make demo` and `make check` are the
# README's two commands.

GO              ?= go
BIN             := bin/pixir
TOOLS           := $(CURDIR)/.tools
GOLANGCI_LINT   := $(TOOLS)/golangci-lint
GOLANGCI_VERSION:= v2.15.0
BENCHTIME       ?= 50x

.PHONY: all build install uninstall demo check test gotest lint fuzz conformance bench tools schemas clean cross

all: build

# A pure-Go, statically linked binary without the symbol table and DWARF
# (stack traces keep their file:line): with cgo the net package links libc,
# and every start of `pixir acp` pays the dynamic loader; a smaller file
# starts faster (docs/BENCHMARKS.md, Start-up). The e2e tests build the same.
BUILDFLAGS      := -ldflags="-s -w"
build:
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o $(BIN) ./cmd/pixir

# Build for the other systems the README names (macOS, FreeBSD, 32-bit
# and ARM Linux): a stat's fields, the *at calls and O_PATH differ between
# them, and this machine's tests only ever build for linux/amd64. Windows
# is not among them (README, Install).
CROSS           ?= darwin/arm64 darwin/amd64 freebsd/amd64 linux/386 linux/arm linux/arm64
cross:
	@for t in $(CROSS); do \
		echo "GOOS=$${t%/*} GOARCH=$${t#*/} go build ./..."; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build ./... || exit 1; \
	done

# Install the binary of make build where a user's PATH finds it: ~/.local/bin
# by default (no root needed); PREFIX=/usr/local (with sudo) for all users.
PREFIX          ?= $(HOME)/.local
BINDIR          ?= $(PREFIX)/bin
install: build
	mkdir -p $(DESTDIR)$(BINDIR)
	install -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/pixir
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; *) echo "install: $(BINDIR) is not on your PATH; add it, e.g. export PATH=\"$(BINDIR):\$$PATH\"";; esac

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pixir

# Build and run a short scripted session through a real ACP client (offline).
demo: build
	./$(BIN) demo
	sh examples/practice-demo/run.sh ./$(BIN)

# Everything CI runs: lint, the Go tests with the race detector, short
# fuzzing of argument validation (strict and lenient), path confinement and
# the JSON scanning under the ACP connection, and the ACP conformance suite
# driven by the official TypeScript client.
check: lint gotest fuzz conformance

test: gotest conformance

# go test's default 10-minute limit per package binary is met by cmd/pixir
# (its e2e tests drive the built binary; about 2 minutes on an idle 2-core
# machine) only when the machine is not heavily shared: give it room, while a
# hang still ends well inside CI's limit.
gotest:
	$(GO) test -race -count=1 -timeout 25m ./...

# golangci-lint refuses to run while another run holds its lock (a shared
# machine, another checkout): wait for it instead of failing.
# The tools and the sandbox's file access are portable (their Linux-only
# parts are split by build tags): a Windows build of them keeps them so.
lint: $(GOLANGCI_LINT)
	$(GO) vet ./...
	GOOS=windows $(GO) build ./tools/ ./sandbox/
	$(GOLANGCI_LINT) run --allow-serial-runners ./...

# Each fuzz target runs for a short, bounded time (FUZZTIME); their seed
# corpora also run in every `go test`. scripts/fuzz tells Go 1.26's
# spurious "context deadline exceeded" at the end of -fuzztime on a loaded
# machine (golang/go#75804) from a finding.
FUZZTIME ?= 15s
fuzz:
	GO=$(GO) sh scripts/fuzz FuzzValidatorAgreesWithSanthosh ./tools/ $(FUZZTIME)
	GO=$(GO) sh scripts/fuzz FuzzLenientSchemaNeverRefusesValidArguments ./tools/ $(FUZZTIME)
	GO=$(GO) sh scripts/fuzz FuzzResolve ./runtime/ $(FUZZTIME)
	GO=$(GO) sh scripts/fuzz FuzzOverlapSound ./workflows/ $(FUZZTIME)
	GO=$(GO) sh scripts/fuzz FuzzScanAgreesWithEncodingJSON ./internal/jsonraw/ $(FUZZTIME)
	GO=$(GO) sh scripts/fuzz FuzzUnquoteToAgreesWithEncodingJSON ./internal/jsonraw/ $(FUZZTIME)

# Built once from source, from the Go module proxy like every other Go
# dependency; on a fresh 2-core machine that takes several minutes, so say so.
$(GOLANGCI_LINT):
	@echo "lint: building golangci-lint $(GOLANGCI_VERSION) into .tools/ from the Go module proxy (first run only; several minutes on 2 cores)..."
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	@echo "lint: golangci-lint $(GOLANGCI_VERSION) is built"

tools: $(GOLANGCI_LINT)

# Regenerate the committed JSON Schemas of the tools and their results
# (schemas/); a test fails when they drift from the Go types.
schemas:
	$(GO) generate ./schemas/...

conformance: build
	cd conformance && npm ci --no-audit --no-fund --loglevel=error
	cd conformance && PIXIR_BIN=$(CURDIR)/$(BIN) npm test

# Benchmarks; figures go into the closing notes and docs.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

clean:
	rm -rf bin .tools conformance/node_modules
