# AiCli host supervisor. `make help` lists the targets.
SHELL := /usr/bin/env bash
BIN ?= bin
CONTROLLER_GEN := go tool -modfile=hack/tools/go.mod controller-gen
GO_STATIC := CGO_ENABLED=0 go build -trimpath -ldflags='-s -w'

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_-]+:.*## /{printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: console-web ## Build the supervisor, aictl, the console and the guest binaries into bin/.
	@mkdir -p $(BIN)
	go build -o $(BIN)/aicli-supervisor ./cmd/aicli-supervisor
	go build -o $(BIN)/aictl ./cmd/aictl
	go build -o $(BIN)/aicli-console ./cmd/aicli-console
	@if [ -d cmd/aicli-guest ]; then $(GO_STATIC) -o $(BIN)/aicli-guest ./cmd/aicli-guest; fi
	@if [ -d cmd/aicli-fake-cli ]; then $(GO_STATIC) -o $(BIN)/aicli-fake-cli ./cmd/aicli-fake-cli; fi
	@if [ -d cmd/aicli-tool ]; then $(GO_STATIC) -o $(BIN)/aicli-tool ./cmd/aicli-tool; fi

.PHONY: console-web
console-web: ## Build the consoles' front-end bundle (npm ci + esbuild) into internal/console/web/dist.
	hack/build-console-web.sh

.PHONY: generate
generate: ## Generate DeepCopy methods for apis/.
	$(CONTROLLER_GEN) object paths=./apis/...

.PHONY: manifests
manifests: ## Generate the CRD manifests into config/crd/bases.
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=config/crd/bases

.PHONY: verify-gen
verify-gen: generate manifests ## Fail when generated code or CRDs drift from apis/.
	@git diff --exit-code -- apis config/crd || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- apis config/crd)" || { git status --porcelain -- apis config/crd; echo "untracked generated files"; exit 1; }

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on every package, e2e and the real-CLI tier included.
	go vet ./...
	go vet -tags e2e ./e2e/...
	go vet -tags 'e2e realcli' ./e2e/...

.PHONY: lint
lint: vet ## gofmt check, vet, go.mod tidy, and import boundaries (aictl links no server code; apis/ imports only apimachinery).
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	@go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit"; exit 1; }
	go run ./hack/checkdeps

.PHONY: test
test: ## Unit and integration tests (no Docker needed).
	go test ./...

.PHONY: test-e2e
test-e2e: console-web ## Docker e2e suite, browser specs included (installs/starts Docker and installs chromium if needed).
	hack/ensure-docker.sh
	hack/ensure-chromium.sh
	go test -tags e2e -count=1 -timeout 30m ./e2e/ -ginkgo.label-filter='!real-cli'

.PHONY: test-realcli
test-realcli: ## Real-CLI tier: Claude Code, Codex, Gemini CLI, OpenCode in their guest images.
	hack/ensure-docker.sh
	go test -tags 'e2e realcli' -count=1 -timeout 40m ./e2e/ -ginkgo.label-filter=real-cli

.PHONY: test-all
test-all: ## Everything CI runs: the README's test command.
	hack/test.sh

.PHONY: bench
bench: ## Long benchmarks; results go to docs/benchmarks.md by hand.
	hack/bench/all.sh

.PHONY: soak
soak: ## Chaos soak: a real supervisor, 20 agents under load, kill -9s, guest/container kills, one dockerd restart (DURATION=2m).
	hack/soak.sh $(or $(DURATION),2m)

.PHONY: run
run: ## Set up and run the supervisor with its embedded defaults.
	hack/run.sh
