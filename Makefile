# GitOps Reverser. `make help` lists the targets.
SHELL := /usr/bin/env bash
GO ?= go
CONTROLLER_GEN := $(GO) tool controller-gen
CHART_CRD_DIR := charts/gitops-reverser/crds

.PHONY: help
help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

.PHONY: generate
generate: ## Generate deepcopy code for the API types
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: ## Generate the CRD manifests into the Helm chart
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=$(CHART_CRD_DIR)

.PHONY: fmt
fmt: ## gofmt the code
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet
	$(GO) vet ./...

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when generated code or manifests are not committed
	@git diff --exit-code -- api $(CHART_CRD_DIR) || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api $(CHART_CRD_DIR))" || { git status --porcelain -- api $(CHART_CRD_DIR); echo "untracked generated files: commit them"; exit 1; }

.PHONY: test-binaries
test-binaries: ## Build (once per machine) kube-apiserver, etcd, Gitea and the sops CLI for the tests
	test/tools/build.sh

# Helm is a Go tool of this module (go.mod's tool block), for the chart and
# docs tests; test/harness.HelmBinary compiles it on demand otherwise.
.PHONY: helm
helm: ## Compile Helm into Go's build cache (the first time on a machine: about 11 minutes on two cores)
	@echo "compiling Helm (go tool -n helm) unless Go's build cache has it: the first time on a machine this takes about 11 minutes on two cores"
	@$(GO) tool -n helm >/dev/null

# Packages whose code runs goroutines of its own are tested under the race
# detector; the rest without it (the detector slows a run several times).
# Each package is tested once: the second run leaves out the race packages.
RACE_PKGS := ./internal/branch/... ./internal/ha/... ./internal/kubecache/... ./internal/watch/... ./internal/discovery/... ./internal/engine/... ./internal/mirror/... ./internal/operator/... ./internal/audit/... ./internal/facts/... ./internal/attribution/... ./internal/admission/... ./internal/redisstore/... ./internal/redisconn/... ./forges/...

.PHONY: test
test: test-binaries helm vet ## Run every test against the real components (concurrent packages under -race)
	$(GO) test -race $(RACE_PKGS) -count=1 -timeout 60m
	$(GO) test $$($(GO) list ./... | grep -vxF -f <($(GO) list $(RACE_PKGS))) -count=1 -timeout 60m

# The high-availability end-to-end test alone: three operator processes
# against one kube-apiserver, one redis-server and one Git server (also part
# of make test; about a minute and a half, most of it one crash failover).
.PHONY: test-ha
test-ha: test-binaries ## Run the HA end-to-end test (three operator processes: spread, crash, graceful stop, return)
	$(GO) test ./test/ha/ -count=1 -timeout 10m -v

.PHONY: bench
bench: test-binaries bench-attribution bench-ha bench-pullrequests bench-replay-memory ## Run the benchmarks
	$(GO) test ./test/bench/ -run '^$$' -bench . -benchtime 1x -timeout 60m -v

# The HA failover figures of docs/benchmarks.md: three operator processes
# (test/ha's fixture), ten SIGKILLs of a branch owner (kill to the first
# commit by another replica) and ten SIGTERMs (to the survivors holding
# every claim); and the throughput of 1, 2 and 3 replicas on 30 branches
# under 10 changes/s (also part of make bench).
.PHONY: bench-ha
bench-ha: test-binaries ## Run the HA benchmarks (crash and graceful handover, p50 and max over 10 each; throughput by replicas)
	$(GO) test ./test/ha/ -run '^$$' -bench '^Benchmark(Failover|ThroughputByReplicas)$$' -benchtime 1x -timeout 40m -v

# Pull-request mode's figures of docs/benchmarks.md: pushes and requests
# per hour under 1 change/s (fake clock, the GitHub and GitLab simulators,
# against direct mode), and the API requests per update on a real Gitea
# (also part of make bench).
.PHONY: bench-pullrequests
bench-pullrequests: test-binaries ## Run the pull-request mode benchmarks (pushes per hour, requests per update)
	$(GO) test ./internal/branch/ -run '^$$' -bench '^BenchmarkPullRequest' -benchtime 1x -timeout 30m -v

# Scenario K's working set without the API server: a 50,000-object replay
# through one worker on the go-git forge (the largest live heap on the way,
# the live heap after, the pack), and the core's replay state per object
# (also part of make bench).
.PHONY: bench-replay-memory
bench-replay-memory: ## Run the replay memory benchmarks (peak live heap of a 50k replay, bytes per object)
	$(GO) test ./internal/branch/ -run '^$$' -bench '^Benchmark(ReplayPeakLiveHeap|ReplayWindowsBytesPerObject)$$' -benchtime 1x -timeout 20m -v

# Scenario H alone: a restart with nothing changed, without Redis and with
# resume cursors (also part of make bench).
.PHONY: bench-cursors
bench-cursors: test-binaries ## Run the warm-restart benchmark (resume cursors in Redis)
	$(GO) test ./test/bench/ -run '^$$' -bench '^BenchmarkRestartWithCursors$$' -benchtime 1x -timeout 30m -v

# Scenario I alone: the admission observer's cost on the write path, its
# coverage of a mixed workload by three actors, and edit to commit with it
# (also part of make bench).
.PHONY: bench-admission
bench-admission: test-binaries ## Run the admission observer benchmarks (write latency, coverage, edit to commit)
	$(GO) test ./test/bench/ -run '^$$' -bench '^BenchmarkObserver' -benchtime 1x -timeout 30m -v

# The attribution figures of docs/benchmarks.md: the audit ingress on one
# core (events/s) and the fact index's heap per 100,000 facts.
.PHONY: bench-attribution
bench-attribution: ## Run the attribution benchmarks (ingress throughput, index memory, the observer's cost per review)
	$(GO) test ./internal/audit/ -run '^$$' -bench '^BenchmarkHandler$$' -cpu 1 -benchtime 2s -v
	$(GO) test ./internal/attribution/ -run '^$$' -bench '^BenchmarkIndexMemory$$' -benchtime 1x -v
	$(GO) test ./internal/admission/observer/ -run '^$$' -bench '^BenchmarkHandlerUpdate$$' -benchtime 2s -v

.PHONY: demo
demo: ## Run the operator on a local control plane and a local Git remote
	test/tools/build.sh etcd kube-apiserver
	$(GO) build -o bin/demo ./test/demo && bin/demo

.PHONY: image
image: ## Build the container image gitops-reverser:dev (needs Docker; not available on the dev machines)
	docker build -t gitops-reverser:dev .
