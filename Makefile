# txengine: `make run` starts the embedded default, `make test` runs every test.
GO      ?= go
BIN     := bin/txengine
DATA    ?= ./data

.PHONY: local-kms bench-kms build run run-postgres run-dev-stack clean-dev-stack sim test test-short test-faults test-hardhat test-cluster test-prometheus prometheus fuzz-short vet bench bench-pools bench-shapes bench-go bench-cluster bench-rotate bench-events bench-k6 contracts proto client clean soak docs-graph

build:
	$(GO) build -o $(BIN) ./cmd/txengine

## run: build and start the service on the embedded default (store and dev chain in $(DATA))
run: build
	TXENGINE_DATA_DIR=$(DATA) ./$(BIN) serve

# A local geth --dev node (built once into .cache/bin, ignored by git).
GETH_VERSION := v1.17.8
GETH_BIN     := .cache/bin/geth
STACK        := .cache/dev-stack
# geth --dev's well-known developer key: its account is funded at genesis.
GETH_DEV_KEY := b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291
STACK_ENV    := TXENGINE_DATA_DIR=$(STACK)/data TXENGINE_NETWORK_NAME=local-geth \
	TXENGINE_NETWORK_CHAIN_ID=1337 TXENGINE_NETWORK_HTTP_URL=http://127.0.0.1:8545 \
	TXENGINE_NETWORK_WS_URL=ws://127.0.0.1:8546 TXENGINE_NETWORK_FAUCET_KEY=$(GETH_DEV_KEY)

$(GETH_BIN):
	GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/ethereum/go-ethereum/cmd/geth@$(GETH_VERSION)

## run-dev-stack: the production shape on one machine: geth --dev in the background (state in
## .cache/dev-stack), a local PostgreSQL cluster (scripts/pg-dev.sh, in .cache/pg) and txengine
## against both, as network "local-geth"; the first run deploys a DEMO token.
run-dev-stack: build $(GETH_BIN)
	@mkdir -p $(STACK)
	@$(GETH_BIN) --dev --dev.period 1 --dev.gaslimit 60000000 --datadir $(STACK)/geth \
		--http --http.addr 127.0.0.1 --http.port 8545 --http.api eth,net,web3,txpool \
		--ws --ws.addr 127.0.0.1 --ws.port 8546 --ws.api eth,net,web3 \
		--nodiscover --maxpeers 0 --ipcdisable \
		--txpool.accountslots 1024 --txpool.globalslots 8192 --txpool.accountqueue 1024 --txpool.globalqueue 8192 \
		>$(STACK)/geth.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid; ./scripts/pg-dev.sh stop' EXIT INT TERM; \
	db=$$(./scripts/pg-dev.sh start) || exit 1; export TXENGINE_DATABASE_URL=$$db; \
	echo "PostgreSQL is up: $$db (log: .cache/pg/server.log)"; \
	for i in $$(seq 1 100); do $(GETH_BIN) attach --exec eth.blockNumber http://127.0.0.1:8545 >/dev/null 2>&1 && break; sleep 0.2; done; \
	echo "geth --dev is up on http://127.0.0.1:8545 and ws://127.0.0.1:8546 (log: $(STACK)/geth.log)"; \
	if [ ! -f $(STACK)/demo-token ]; then \
		$(STACK_ENV) ./$(BIN) token deploy --network local-geth --name "Demo Token" --symbol DEMO \
			--supply 1000000000000000000000000 && touch $(STACK)/demo-token || exit 1; \
	fi; \
	$(STACK_ENV) ./$(BIN) serve

## clean-dev-stack: forget the dev stack's chain and database
clean-dev-stack:
	./scripts/pg-dev.sh stop
	rm -rf $(STACK) .cache/pg

## run-postgres: the embedded dev chain with the PostgreSQL store (scripts/pg-dev.sh)
run-postgres: build
	@db=$$(./scripts/pg-dev.sh start) || exit 1; trap './scripts/pg-dev.sh stop' EXIT INT TERM; \
	echo "PostgreSQL is up: $$db"; \
	TXENGINE_DATABASE_URL=$$db TXENGINE_DATA_DIR=$(DATA)-postgres ./$(BIN) serve

## test: vet and run every test (unit, store, chain and end-to-end with the real binary)
## with the race detector, except the cluster tests (./tests/cluster: make test-cluster; the
## in-process ones of ./actors run after, without -race: protoactor's gossip races with itself)
test: vet prometheus
	@pkgs=$$($(GO) list ./... | grep -v '/tests/cluster') || exit 1; \
	echo "$(GO) test -race -count=1 -timeout 30m ./... (but ./tests/cluster)"; \
	$(GO) test -race -count=1 -timeout 30m $$pkgs
	@echo "$(GO) test -count=1 -run '^TestCluster' ./actors/ (two cluster members in one process; protoactor's gossip races under -race)"
	@$(GO) test -count=1 -run '^TestCluster' ./actors/
	@echo "$(GO) test -count=1 -run '^TestSimulation' ./tests/sim/ (300 seeds; 40 ran under -race above: the race detector makes the pure-Go SQLite several times slower, and the simulation runs on one goroutine)"
	@$(GO) test -count=1 -run '^TestSimulation' ./tests/sim/

## prometheus: Prometheus and promtool (Debian's package prometheus, 2.42) for the tests that run
## them (internal/promtest); nothing when both are on PATH, else apt-get as root. Without them
## those tests skip, or fail under CI=true.
prometheus:
	@./scripts/install-prometheus.sh

## test-prometheus: the Prometheus tests alone (part of test too): every query of the Grafana
## dashboard evaluated by a real Prometheus scraping an end-to-end burst; the alert rules with
## promtool check rules and promtool test rules
test-prometheus: prometheus
	$(GO) test -race -count=1 -v ./internal/promtest/
	$(GO) test -race -count=1 -v -run '^TestPrometheusDashboardQueries$$' ./tests/e2e/

## test-faults: the fault tests alone (part of test too): geth and PostgreSQL stopped and
## restarted mid-burst, the service killed mid-burst, a transfer accepted while the node is down
test-faults:
	$(GO) test -race -count=1 -timeout 20m -v -run '^(TestFault|TestKillDuringBurst|TestGethOutage)' ./tests/e2e/

## test-hardhat: the tests on Hardhat's node (npm hardhat@2.29.1, which internal/hardhattest
## installs into .cache/hardhat with npm ci from its committed lock file; they skip without
## Node.js and npm, and fail without them under CI=true)
test-hardhat:
	$(GO) test -race -count=1 -timeout 20m -v -run Hardhat ./internal/hardhattest/ ./tests/e2e/

## test-cluster: three txengine nodes on loopback sharing PostgreSQL and geth --dev (and
## etcd, for the etcd membership provider): a burst over all three with one node killed -9,
## a rolling restart under load; every accepted transaction completes exactly once
test-cluster:
	$(GO) test -race -count=1 -timeout 40m -v ./tests/cluster/...

## sim: the simulation of the engine under faults (tests/sim, docs/simulation.md): SIM_SEEDS seeds
## (10,000 by default, from SIM_FIRST), or the one seed SEED=n (a replay: the engine's log with
## SIM_VERBOSE=1). SIM_WITH="finding 2" puts back the faults of a known finding left out;
## SIM_STEPS sets the faulty phase's length (the replay of a seed needs the same).
## go test ./tests/sim/ (part of make test) runs fewer.
SIM_SEEDS   ?= 10000
SIM_FIRST   ?= 1
SIM_VERBOSE ?=
SIM_WITH    ?=
SIM_STEPS   ?=
sim:
	@if [ -n "$(SEED)" ]; then \
		TXENGINE_SIM_SEED=$(SEED) TXENGINE_SIM_VERBOSE=$(SIM_VERBOSE) TXENGINE_SIM_WITH="$(SIM_WITH)" TXENGINE_SIM_STEPS=$(SIM_STEPS) \
			$(GO) test -count=1 -timeout 30m -v -run '^TestSimulation$$' ./tests/sim/; \
	else \
		TXENGINE_SIM_SEEDS=$(SIM_SEEDS) TXENGINE_SIM_FIRST=$(SIM_FIRST) TXENGINE_SIM_STEPS=$(SIM_STEPS) TXENGINE_SIM_WITH="$(SIM_WITH)" \
			$(GO) test -count=1 -timeout 12h -v -run '^TestSimulation$$' ./tests/sim/; \
	fi

## test-short: unit tests only
test-short:
	$(GO) test -count=1 -short ./...

## fuzz-short: run every fuzz target for FUZZTIME (default 10s) each; `make test` already runs
## their seeds and committed corpora (testdata/fuzz). Packages are those with a func Fuzz*.
FUZZTIME ?= 10s
fuzz-short:
	@set -e; for dir in $$($(GO) list -f '{{.Dir}}' ./...); do \
		grep -qs '^func Fuzz' $$dir/*_test.go || continue; \
		for target in $$($(GO) test -list '^Fuzz' $$dir | grep '^Fuzz'); do \
			echo "== $$dir $$target ($(FUZZTIME))"; \
			log=$$(mktemp); \
			if $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$dir >$$log 2>&1; then cat $$log; else \
				cat $$log; \
				if grep -q 'Failing input written' $$log || ! grep -q 'context deadline exceeded' $$log; then exit 1; fi; \
				echo "== $$target: the fuzzer stopped on its own deadline without a failing input (a known race of go test -fuzz); once more"; \
				$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$dir; \
			fi; \
			rm -f $$log; \
		done; \
	done

vet:
	$(GO) vet ./...

## bench: the benchmark suite (P1..P5, the shapes, and the busy-mempool rows of bench-pools; about
## 30 minutes, needs the whole machine) and one table;
## BENCH_OUT=file.json saves the run, `go run ./bench/median runs...` prints medians.
## Not part of `make test`.
bench:
	TXENGINE_BENCH=1 $(GO) test -v -count=1 -timeout 90m -run '^TestBench$$' ./bench/suite/

## bench-shapes: the shape rows of make bench alone (issues 16 and 28): 1 x 10,000, 1,000 x 10 and
## 10,000 x 1 with the defaults, 64 clients, to holders and to fresh recipients, on PostgreSQL +
## geth --dev and on the embedded default; accepts, p99, drain beside the chain bound, CPU per
## completed transfer, each block. SHAPES=pg,pg.fresh,pool,emb,emb.fresh,emb.breadth picks parts
## (all by default).
SHAPES ?=
bench-shapes:
	TXENGINE_BENCH=shapes TXENGINE_BENCH_SHAPES=$(SHAPES) $(GO) test -v -count=1 -timeout 60m -run '^TestBenchShapes$$' ./bench/suite/

## bench-pools: the busy-mempool rows of make bench alone (issue 30): POOLS_N transfers (10,000) from
## one account, then through a pool of POOLS_SIZE (32), 64 clients, each on a fresh geth --dev (16
## account slots) behind rpcproxy.BusyMempool (a sender's 17th pending refused with geth's "txpool is
## full") and PostgreSQL, defaults: drain, chain bound, refusals, CPU per transaction, node check.
## POOLS_ONLY=single or pool runs one; POOLS_RECIPIENTS=10000 sends each transfer to a fresh address
## (100 by default: holders after their first transfer). The pool row runs a second burst through the
## same pool (a pool in use; POOLS_WARM=0 skips it). Not part of make test.
POOLS_N    ?= 10000
POOLS_SIZE ?= 32
POOLS_ONLY ?=
POOLS_RECIPIENTS ?= 100
POOLS_WARM ?= 1
bench-pools:
	TXENGINE_BENCH=pools TXENGINE_BENCH_POOLS_N=$(POOLS_N) TXENGINE_BENCH_POOLS_SIZE=$(POOLS_SIZE) TXENGINE_BENCH_POOLS_ONLY=$(POOLS_ONLY) \
		TXENGINE_BENCH_POOLS_RECIPIENTS=$(POOLS_RECIPIENTS) TXENGINE_BENCH_POOLS_WARM=$(POOLS_WARM) \
		$(GO) test -v -count=1 -timeout 60m -run '^TestBenchPools$$' ./bench/suite/

## bench-go: the Go micro-benchmarks docs/performance.md quotes (hot path, store writes; PostgreSQL ones start a
## throwaway cluster), written to bench/results/go-bench.txt with the machine and date.
bench-go:
	@{ echo "# $$(date -u '+%Y-%m-%d %H:%M UTC'), $$(nproc) cores, $$(go version)"; \
	  $(GO) test -run '^$$' -bench . -benchtime 300ms -count 1 ./engine/ ./engine/keystore/ ./http/ ./persistence/sqlite/ ./persistence/postgres/; } \
	  | tee bench/results/go-bench.txt

## bench-cluster: throughput of 1 node (single-node and cluster mode) beside 3 nodes in
## cluster mode, same burst, each on PostgreSQL + geth --dev (tests/cluster, minutes); per
## accepted transfer: the nodes' CPU (summed), PostgreSQL's CPU, statements, commits, rows and
## WAL bytes (docs/cluster.md). TXENGINE_BENCH_SHAPE=500x10 shortens it.
bench-cluster:
	TXENGINE_BENCH=1 $(GO) test -v -count=1 -timeout 30m -run '^TestClusterThroughput$$' ./tests/cluster/

## bench-rotate: `txengine keys rotate` (engine.RotateKeys) on 100,000 accounts (ROTATE_ACCOUNTS),
## on SQLite and on PostgreSQL (a throwaway cluster), while a reader and a writer use the store.
ROTATE_ACCOUNTS ?= 100000
bench-rotate:
	TXENGINE_BENCH=rotate TXENGINE_BENCH_ROTATE_ACCOUNTS=$(ROTATE_ACCOUNTS) $(GO) test -v -count=1 -timeout 60m -run '^TestRotate$$' ./bench/rotate/

## bench-events: GET /contracts/{id}/events paged through as a client does (engine.ContractEvents,
## pages of 1,000 from block 0): EVENT_BLOCKS calls of a contract emitting 10 events, one a block,
## on EVENT_NODE=sim (simulated backend over a unix socket, about 30 s with the chain's making) or
## geth (geth --dev over HTTP, about 2 minutes); prints the time and the node calls.
EVENT_BLOCKS ?= 10000
EVENT_NODE ?= sim
bench-events:
	TXENGINE_BENCH=events TXENGINE_BENCH_EVENT_BLOCKS=$(EVENT_BLOCKS) TXENGINE_BENCH_EVENT_NODE=$(EVENT_NODE) \
	  $(GO) test -v -count=1 -timeout 25m -run '^TestEventsScale$$' ./engine/evm/

# local-kms (github.com/nsmithuk/local-kms, an AWS KMS emulator with secp256k1 signing), built
# once into .cache/bin for the KMS tests (internal/kmstest builds it on demand too).
LOCAL_KMS_VERSION := v0.0.0-20260228092603-2a5e92d09ab6
LOCAL_KMS_BIN     := .cache/bin/local-kms

$(LOCAL_KMS_BIN):
	GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/nsmithuk/local-kms@$(LOCAL_KMS_VERSION)

## local-kms: install local-kms into .cache/bin (the KMS tests skip without it, fail under CI=true)
local-kms: $(LOCAL_KMS_BIN)

## bench-kms: KMS_N transfers (10,000) from one account on geth --dev, its key sealed locally, in
## KMS (local-kms) and in KMS with KMS_DELAY (15ms) added to every KMS call: drain beside the
## chain bound, CPU per transfer (bench/suite TestBenchKMS; a few minutes). Not part of make test.
KMS_N     ?= 10000
KMS_DELAY ?= 15ms
bench-kms: $(LOCAL_KMS_BIN)
	TXENGINE_BENCH=kms TXENGINE_BENCH_KMS_N=$(KMS_N) TXENGINE_BENCH_KMS_DELAY=$(KMS_DELAY) \
		$(GO) test -v -count=1 -timeout 30m -run '^TestBenchKMS$$' ./bench/suite/

# k6 (go.k6.io/k6, built once into .cache/bin; about a minute).
K6_VERSION := v1.8.1
K6_BIN     := .cache/bin/k6

$(K6_BIN):
	GOBIN=$(CURDIR)/.cache/bin $(GO) install go.k6.io/k6@$(K6_VERSION)

## bench-k6: bench/k6/transfer.js against the embedded default started as `make run` does (fresh
## data in .cache/k6, free port); RATE=500 DURATION=30s VUS=64 by default. Installs k6 when
## missing. Not part of `make test`.
bench-k6: build $(K6_BIN)
	K6=$(K6_BIN) BIN=$(BIN) ./scripts/bench-k6.sh

## contracts: recompile the Solidity sources (needs npm); the artifacts are committed
contracts:
	./contracts/build.sh

## proto: regenerate the cluster messages (actors/clusterpb) from their .proto;
## needs protoc (Debian: protobuf-compiler); protoc-gen-go is built into .cache/bin.
## The generated code is committed.
proto:
	GOBIN=$(CURDIR)/.cache/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	PATH="$(CURDIR)/.cache/bin:$$PATH" protoc --go_out=. --go_opt=module=github.com/txengine/txengine actors/clusterpb/messages.proto

## client: regenerate the Go client (client/client.gen.go) from http/openapi.json with
## oapi-codegen, pinned in go.mod as a tool, and client/oapi-codegen.yaml. The generated code
## is committed; client's TestClientUpToDate fails when it is stale.
client:
	$(GO) tool oapi-codegen -config client/oapi-codegen.yaml http/openapi.json

## docs-graph: regenerate docs/packages.md, the package graph, from the imports (internal/tools/pkggraph;
## its test fails when the page is out of date)
docs-graph:
	$(GO) run ./internal/tools/pkggraph -o docs/packages.md

clean:
	rm -rf bin

## soak: one hour (SOAK_DURATION=10m shortens it) of steady load over 1,000 accounts on PostgreSQL
## and geth --dev, callbacks on every transfer, geth restarted half way; RSS, goroutines, open
## files, database connections and row counts sampled every 5 minutes (SOAK_EVERY); fails on a
## loss, a duplicate, a missing callback or a bounded quantity that keeps growing. Not in CI.
SOAK_DURATION ?= 1h
SOAK_EVERY    ?= 5m
soak:
	TXENGINE_SOAK=1 TXENGINE_SOAK_DURATION=$(SOAK_DURATION) TXENGINE_SOAK_EVERY=$(SOAK_EVERY) \
		$(GO) test -v -count=1 -timeout 3h -run '^TestSoak$$' ./bench/suite/
