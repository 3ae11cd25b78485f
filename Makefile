# EchoMQ conformance kit. Every target provisions what it needs (ci/provision-*.sh, cached
# outside the repo) and starts its engines itself on free loopback ports.
SHELL := /bin/bash
GO ?= go
PORT ?=
OUT ?= certification
GOTEST_FLAGS ?= -count=1 -timeout 30m

.PHONY: test conform engines provision provision-faketime provision-bullmq provision-node-systems provision-chromium transcripts bench bench-ci bundle fuzz vet fmt node-test faults mutants mutation mutation-smoke

## test: vet, gofmt, every Go test against real engines (the mutant table has its own target), the Node port's unit tests
test: provision provision-chromium provision-node-systems vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) test $(GOTEST_FLAGS) -short ./...
	@if [ -d ports/node ] && command -v node >/dev/null; then $(MAKE) --no-print-directory node-test; fi

## conform: certify the reference bus (in-process and as a subprocess), or PORT='cmd …'. As an
## ordinary user: the engines are unpacked into the cache, and emq-conform, given no -valkey,
## has cmd/emq-engines start Valkey 8.1.1 and (for C01) a Redis 7 on free loopback ports.
## CLUSTER=1 runs the same against a fresh 3-primary Valkey Cluster that emq-engines starts for
## each run (with a standalone Valkey 8.1 beside it, which C01 presents to the port in cluster
## mode): every clause, the cluster wire law, queues on every primary; `make conform-cluster` too.
## PORT reaches emq-conform through the environment (EMQ_PORT), never pasted into a shell line:
## a quote in it is part of the command emq-conform splits, not shell syntax.
## The binaries go to bin/ (emq-engines beside emq-conform starts the servers), so the replay line
## a failed run prints (bin/emq-conform -port … -focus …) runs as printed from this folder.
## Exit status: GNU make exits 2 whenever a command fails, so `make conform` is 0 certified and 2
## otherwise; `certify` says which on the last line before make's own "Error N" (N is
## emq-conform's status: 1 the port failed, 2 a harness error).
certify = @echo "bin/emq-conform $(1)"; st=0; bin/emq-conform $(1) || st=$$?; case $$st in \
	0) ;; \
	1) echo "make conform: NOT CERTIFIED: the port failed (emq-conform exit 1; make itself exits 2)" >&2; exit 1;; \
	*) echo "make conform: HARNESS ERROR: the kit could not run; nothing is said of the port (emq-conform exit $$st; make itself exits 2)" >&2; exit $$st;; \
	esac
ifeq ($(strip $(CLUSTER)),)
conform: provision-valkey provision-redis provision-valkey80 provision-faketime
	$(GO) build -o bin/ ./cmd/emq-conform ./cmd/emq-engines ./cmd/emq-port
ifeq ($(strip $(PORT)),)
	$(call certify,-out $(OUT)/reference)
	$(call certify,-port ./bin/emq-port -out $(OUT)/reference-subprocess)
else
	$(call certify,-out $(OUT)/port)
endif
else
conform: conform-cluster
endif
conform conform-cluster: export EMQ_PORT = $(value PORT)

.PHONY: conform-cluster
conform-cluster: provision-valkey provision-redis provision-valkey80 provision-faketime
	$(GO) build -o bin/ ./cmd/emq-conform ./cmd/emq-engines ./cmd/emq-port
ifeq ($(strip $(PORT)),)
	$(call certify,-cluster start -out $(OUT)/reference-cluster)
	$(call certify,-cluster start -port ./bin/emq-port -out $(OUT)/reference-subprocess-cluster)
else
	$(call certify,-cluster start -out $(OUT)/port-cluster)
endif

## engines: start Valkey 8.1.1 and PostgreSQL 16.14 and print the addresses to export (Ctrl-C stops them)
engines: provision
	$(GO) run ./cmd/emq-engines

provision: provision-valkey provision-postgres provision-redis provision-valkey80 provision-faketime
provision-valkey:
	@bash ci/provision-valkey.sh >/dev/null
provision-postgres:
	@bash ci/provision-postgres.sh >/dev/null
provision-valkey80:
	@bash ci/provision-valkey80.sh >/dev/null
provision-redis:
	@bash ci/provision-redis.sh >/dev/null
## provision-faketime: libfaketime, which C02 lease-lost-across-a-wall-step preloads into a subprocess port
provision-faketime:
	@bash ci/provision-faketime.sh >/dev/null
provision-chromium:
	@bash ci/provision-chromium.sh >/dev/null
# The bench's Node.js systems (BullMQ, graphile-worker, pg-boss) and the pinned Node.js 22 they run
# on, from the npm registry into the cache (no root); any npm client installs them.
provision-node-systems:
	@if command -v npm >/dev/null; then bash ci/provision-node-systems.sh >/dev/null; else echo "npm absent: the bench will say the Node.js systems were not measured"; fi
provision-bullmq: provision-node-systems

## transcripts: regenerate every generated file the tests hold to a fresh run: the frozen
## transcripts (transcripts/conformance-*.out, connector.out) and contracts/TRACEABILITY.md.
## transcripts/faults.out is written by `make faults` (its long drills take minutes), the bench's
## record under transcripts/bench by `make bench`.
transcripts: provision
	$(GO) test -count=1 ./internal/gate -run TestTranscript -update
	$(GO) test -count=1 ./contracts -run "^(TestTraceability|TestReferenceInProcess|TestNodePort|TestReferenceOnCluster)$$" -update

## mutants: every catalogue mutant against its own contract, killed on behaviour (prints the table)
mutants: provision-valkey provision-redis provision-valkey80
	$(GO) test -count=1 -timeout 45m -run TestMutantsAreKilled -v ./contracts

## mutation: StrykerJS over the Node port, gremlins over the Go reference as emq-port, the kit's
## operators over lua/, every mutant judged by a certification on behaviour, a survivor of the
## reference or the bundle against a cluster too (internal/mutation;
## hours for all of them: MUTATION_SAMPLE=N MUTATION_SEED=S draws a reproducible sample per
## port). Ends with one `MUTATION <port> killed K/N (P %) equivalent E untriaged U` line per port;
## survivors under out/mutation. Not part of make test; mutation-smoke is 3 mutants per port.
MUTATION_SAMPLE ?= 0
MUTATION_SEED ?= 1
MUTATION_OUT ?= out/mutation
MUTATION_FLAGS ?=
mutation: provision-valkey provision-redis provision-valkey80
	$(GO) build -o bin/emq-mutation ./cmd/emq-mutation
	EMQ_STRYKER=$$(bash ci/provision-stryker.sh) EMQ_GREMLINS=$$(bash ci/provision-gremlins.sh) \
		./bin/emq-mutation -sample $(MUTATION_SAMPLE) -seed $(MUTATION_SEED) -out $(MUTATION_OUT) $(MUTATION_FLAGS)
mutation-smoke:
	$(MAKE) --no-print-directory mutation MUTATION_SAMPLE=3 MUTATION_SEED=1 MUTATION_OUT=out/mutation-smoke MUTATION_FLAGS="-profile contract -triaged=false"

## faults: the long fault drills (internal/faults; `make test` runs the short ones) and the worst-case timing at the defaults — writes transcripts/faults.out
faults: provision-valkey
	$(GO) test -count=1 -v -timeout 15m -run '^(TestDrills|TestWorstCaseAtDefaults)$$' ./internal/faults -args -faults.long -faults.out $(CURDIR)/transcripts/faults.out

## bench: the full bench (the bus vs BullMQ and asynq on Valkey, River, graphile-worker and pg-boss on PostgreSQL, the Oban-shaped model; the backlog axis; the scale axis on 1, 2 and 3 cluster primaries); bench-ci: the short one CI runs (its scale axis adds about 15 s, not gated)
# DURABILITY=1 adds the guarantee-matched axis to the full bench (bench-ci always runs it): Valkey appendfsync always beside Postgres synchronous_commit=on.
BENCH_FLAGS := $(if $(DURABILITY),-durability,)
# The committed record is refused when more than 15% of the cores were busy with other work.
# The gate's baseline check builds the bus at BENCH_BASELINE (a git ref; empty: the last release
# tag) and at the working tree and compares them interleaved; with no tag to find it says NOT RUN.
BENCH_BASELINE ?=
bench: provision provision-node-systems
	$(GO) run ./cmd/emq-bench -mode full $(BENCH_FLAGS) -gate bench/gate.json -baseline "$(BENCH_BASELINE)" -max-outside 0.15 -out transcripts/bench
bench-ci: provision provision-node-systems
	$(GO) run ./cmd/emq-bench -mode ci -durability -gate bench/gate.json -baseline "$(BENCH_BASELINE)" -out out/bench

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

## cluster: a 3-primary Valkey Cluster on demand, the co-location law on it (every bundle script through reference/cluster), the bus in cluster mode (every op, consumers on every primary), the slot-migration drills (router and bus)
.PHONY: cluster engines-cluster
cluster: provision-valkey
	$(GO) test $(GOTEST_FLAGS) -run 'TestCluster' ./internal/engines
	$(GO) test $(GOTEST_FLAGS) ./reference/cluster
	$(GO) test $(GOTEST_FLAGS) -run 'TestCluster' ./reference/bus
## engines-cluster: start a 3-primary cluster (beside a single Valkey) and print EMQ_VALKEY_CLUSTER
engines-cluster: provision-valkey
	$(GO) run ./cmd/emq-engines -valkey-only -cluster
