# chargeonce developer commands. `make test` is what CI runs.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
REDOCLY := @redocly/cli@2.77.0

.PHONY: dev test drill test-race lint check fmt vet staticcheck workflowcheck lint-openapi bench bench-stack fuzz soak

## dev: run the whole stack in one process (embedded Temporal + Web UI, fake provider, worker, API); DEV_FLAGS are its flags
# go run prints nothing while it compiles: the line says why the first start
# takes long. docs/design.md ("Build size") has the figure.
dev:
	@echo "building the dev stack (the first time compiles the embedded Temporal server: up to 17 minutes on 2 cores; later runs start in seconds)…"
	$(GO) run ./dev $(DEV_FLAGS)

.PHONY: cluster
## cluster: run the production shape from real parts, each its own process (PostgreSQL, Temporal server and Web UI, 2 workers, 2 APIs, fake provider)
cluster:
	$(GO) run ./dev/cmd/cluster

# Packages that link the embedded Temporal server. The race detector makes
# the server several times slower to build and run, so `make test` runs
# their tests without it; `make check` runs everything with it.
SERVER_PKGS := ./cmd/worker ./tests ./dev ./dev/stack ./dev/temporalserver ./verify/chaos ./verify/cmd/...
SERVER_DIRS := -e '/cmd/worker$$' -e '/tests$$' -e '/dev$$' -e /dev/stack -e /dev/temporalserver -e /verify/chaos -e /verify/cmd/

## test: start PostgreSQL (Debian package, loopback) and run every test; the race detector covers all but the server-backed packages
test:
	@if [ -z "$$CHARGEONCE_TEST_POSTGRES_URL" ]; then export $$(sh .ci/postgres.sh | tail -n 1); fi; \
	$(GO) test -race -timeout 20m $$($(GO) list ./... | grep -v $(SERVER_DIRS)) && \
	$(GO) test -timeout 40m $(SERVER_PKGS)

## drill: the rollout drill on the local cluster (about 5 minutes): payments in flight across a new, incompatible version of the workers, and the rollback of a bad one; CI runs it after make test
drill:
	$(GO) test -timeout 40m -run '^TestRolloutDrill_' ./tests -drill

## test-race: every test with the race detector, server-backed ones included (slow)
test-race:
	@if [ -z "$$CHARGEONCE_TEST_POSTGRES_URL" ]; then export $$(sh .ci/postgres.sh | tail -n 1); fi; \
	$(GO) test -race -timeout 60m ./...

## lint: formatting, vet, staticcheck, workflowcheck (the determinism check of the workflow code) and the OpenAPI document's linter; CI runs it before the tests
lint: fmt vet staticcheck workflowcheck lint-openapi

## check: lint, then every test with the race detector
check: lint test-race

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

workflowcheck:
	$(GO) run $(WORKFLOWCHECK) ./workflows/...

## lint-openapi: lint docs/openapi.json with Redocly's recommended rules (.redocly.lint-ignore.yaml says what it ignores, and why); needs Node.js >= 20.19 with npx, which CI=true requires and a developer's machine may lack
lint-openapi:
	@if command -v npx >/dev/null 2>&1; then npx --yes $(REDOCLY) lint docs/openapi.json; \
	elif [ "$$CI" = true ]; then echo "lint-openapi: npx is missing: install Node.js and npm"; exit 1; \
	else echo "lint-openapi: skipped, npx is missing: install Node.js and npm to lint docs/openapi.json"; fi

## bench: the hot pure functions, with allocation counts
bench:
	$(GO) test -run '^$$' -bench . -benchmem . ./fakeprovider/... ./provider/... ./internal/codec/... ./verify/cmd/bench/...

## bench-stack: the whole stack under load against its references (about 5 minutes; BENCH_FLAGS=--quick for 2)
bench-stack:
	$(GO) run ./verify/cmd/bench --out bench-results.json $(BENCH_FLAGS)

## fuzz: a short run of every fuzz target (FUZZTIME=30s each by default)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseMoney_RoundTrips$$' -fuzztime $(FUZZTIME) .
	$(GO) test -run '^$$' -fuzz '^FuzzParseKey$$' -fuzztime $(FUZZTIME) ./fakeprovider
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCharge$$' -fuzztime $(FUZZTIME) ./fakeprovider
	$(GO) test -run '^$$' -fuzz '^FuzzParseSignatures$$' -fuzztime $(FUZZTIME) ./internal/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshal$$' -fuzztime $(FUZZTIME) ./internal/strictjson

## soak: a long fault-injection run (2000 checkouts, 10 worker kills, 3 Temporal restarts); exits 1 on any broken promise
soak:
	$(GO) run ./verify/cmd/chaos --checkouts 2000 --worker-kills 10 --server-restarts 3
