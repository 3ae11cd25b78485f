# EchoMQ conformance kit. Every target provisions what it needs (ci/provision-*.sh, cached
# outside the repo) and starts its engines itself on free loopback ports.
SHELL := /bin/bash
GO ?= go
PORT ?=
OUT ?= certification
GOTEST_FLAGS ?= -count=1 -timeout 15m

.PHONY: test conform engines provision transcripts bench bench-ci bundle fuzz vet fmt node-test faults

## test: everything CI checks — vet, gofmt, all Go tests against real engines, the Node port's unit tests
test: provision vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) test $(GOTEST_FLAGS) ./...
	@if [ -d ports/node ] && command -v node >/dev/null; then $(MAKE) --no-print-directory node-test; fi

## conform: certify the reference bus (in-process and as a subprocess), or PORT='cmd …'
conform: provision-valkey provision-redis
ifeq ($(strip $(PORT)),)
	$(GO) build -o bin/emq-port ./cmd/emq-port
	$(GO) run ./cmd/emq-conform -out $(OUT)/reference
	$(GO) run ./cmd/emq-conform -port ./bin/emq-port -out $(OUT)/reference-subprocess
else
	$(GO) run ./cmd/emq-conform -port '$(PORT)' -out $(OUT)/port
endif

## engines: start Valkey 8.1.1 and PostgreSQL 16.14 and print the addresses to export (Ctrl-C stops them)
engines: provision
	$(GO) run ./cmd/emq-engines

provision: provision-valkey provision-postgres provision-redis provision-valkey80
provision-valkey:
	@bash ci/provision-valkey.sh >/dev/null
provision-postgres:
	@bash ci/provision-postgres.sh >/dev/null
provision-valkey80:
	@bash ci/provision-valkey80.sh >/dev/null
provision-redis:
	@bash ci/provision-redis.sh >/dev/null

## transcripts: regenerate every deterministic frozen transcript under transcripts/
transcripts: provision
	$(GO) test -count=1 ./internal/gate -run TestTranscript -update
	$(GO) test -count=1 ./contracts -run "TestReferenceInProcess|TestNodePort" -update

## faults: the long fault drills (internal/faults; `make test` runs the short ones) — writes transcripts/faults.out
faults: provision-valkey
	$(GO) test -count=1 -timeout 15m -run TestDrills ./internal/faults -args -faults.long -faults.out $(CURDIR)/transcripts/faults.out

## bench: the full bench (bus vs Oban-shaped vs River); bench-ci: the short one CI runs
# DURABILITY=1 adds the opt-in axis: the bus under appendfsync always, Postgres with synchronous_commit=off.
BENCH_FLAGS := $(if $(DURABILITY),-durability,)
bench: provision
	$(GO) run ./cmd/emq-bench -mode full $(BENCH_FLAGS) -out transcripts/bench
bench-ci: provision
	$(GO) run ./cmd/emq-bench -mode ci $(BENCH_FLAGS) -out out/bench

## bundle: the bundle version, every script's SHA1 and the bundle digest
bundle:
	$(GO) run ./cmd/emq-bundle

## fuzz: the RESP2 reader's fuzzer (FUZZTIME=3m)
FUZZTIME ?= 3m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime $(FUZZTIME) ./reference/resp

vet:
	$(GO) vet ./...

node-test:
	cd ports/node && node --test

fmt:
	gofmt -w $$(git ls-files '*.go')
