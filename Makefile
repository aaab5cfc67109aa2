# chargeonce developer commands. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

.PHONY: dev test check fmt vet staticcheck workflowcheck bench fuzz

## dev: run the whole stack in one process (embedded Temporal + Web UI, fake provider, worker, API)
dev:
	$(GO) run ./dev

## test: start PostgreSQL (Debian package, loopback) and run every test, with the race detector
test:
	@if [ -z "$$CHARGEONCE_TEST_POSTGRES_URL" ]; then export $$(sh .ci/postgres.sh | tail -n 1); fi; \
	$(GO) test -race -timeout 30m ./...

## check: formatting, vet, staticcheck, workflowcheck, then the tests
check: fmt vet staticcheck workflowcheck test

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

workflowcheck:
	$(GO) run $(WORKFLOWCHECK) ./workflows/...

## bench: the hot pure functions, with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem . ./fakeprovider/... ./provider/... ./codec/...

## fuzz: a short run of every fuzz target
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseMoney -fuzztime 30s .
