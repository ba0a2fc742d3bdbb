# txengine: `make run` starts the embedded default, `make test` runs every test.
GO      ?= go
BIN     := bin/txengine
DATA    ?= ./data

.PHONY: build run test test-short vet bench contracts clean

build:
	$(GO) build -o $(BIN) ./cmd/txengine

## run: build and start the service on the embedded default (store and dev chain in $(DATA))
run: build
	TXENGINE_DATA_DIR=$(DATA) ./$(BIN) serve

## test: vet and run every test (unit, store, chain and end-to-end with the real binary)
test: vet
	$(GO) test -count=1 -timeout 30m ./...

## test-short: unit tests only
test-short:
	$(GO) test -count=1 -short ./...

vet:
	$(GO) vet ./...

## contracts: recompile the Solidity sources (needs npm); the artifacts are committed
contracts:
	./contracts/build.sh

clean:
	rm -rf bin
