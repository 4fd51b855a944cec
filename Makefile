# delaybridge — common tasks. `make demo` and `make test` start Redis and
# RabbitMQ on 127.0.0.1 first when they are not running (scripts/services.sh);
# the demo stops them again afterwards.

GO      ?= go
# The release's stamp: the version in the VERSION file (0.2.0; not git
# describe: tags may not travel with the repository, so a build of the
# release commit names its release without them), the commit and the build
# time, read by `delaybridge version [--json]` and exported as
# delaybridge_build_info. scripts/build-static.sh (the image) stamps the same.
# docs/releasing.md says when VERSION changes and how the release is tagged.
VERSION ?= $(shell cat VERSION 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build test compat lint chromium python-redis jaeger demo demo-kafka demo-intake services services-stop chaos fuzz bench bench-quick clean ldflags helm-sync

# GOOS=linux GOARCH=arm64 make build cross-compiles (the release workflow).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/delaybridge ./cmd/delaybridge
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/devkafka ./cmd/devkafka

# The -ldflags `make build` uses, for scripts: go build -ldflags "$$(make -s ldflags)".
ldflags:
	@echo '$(LDFLAGS)'

# A Helm chart cannot read files outside its directory: the chart carries
# copies of the dashboard and the alert rules, and so does the kustomize base
# of the dashboard. Refresh them after editing deploy/grafana or
# deploy/prometheus (deploy's TestSyncedCopies fails while they differ).
helm-sync:
	cp deploy/grafana/delaybridge.json deploy/helm/delaybridge/files/delaybridge.json
	cp deploy/prometheus/rules.yaml deploy/helm/delaybridge/files/rules.yaml
	cp deploy/grafana/delaybridge.json deploy/kubernetes/base/dashboard/delaybridge.json

services:
	scripts/services.sh start
	scripts/redis-cluster.sh start

# Stops what `make services` started (each script stops only what it
# started itself; services that were already running are left alone).
services-stop:
	-scripts/redis-cluster.sh stop
	-scripts/services.sh stop

# lint: gofmt, go vet and staticcheck (pinned in scripts/staticcheck.sh,
# which installs it when missing), over both modules (root and deploy/).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...
	scripts/staticcheck.sh ./...
	cd deploy && ../scripts/staticcheck.sh ./...

# The suites that run the built daemon as processes (e2e, cluster, chaos)
# check timing (lateness, recovery after a fault) and each keeps both cores
# busy: they run one package at a time, after the rest of the module.
SUITES := e2e cluster chaos
MODULE = $(shell $(GO) list -m)

# chromium: the console's browser test needs it (scripts/chromium.sh installs
# Debian's package when missing; quiet when present). In CI (CI=true) the
# test fails without it rather than skipping.
chromium:
	@scripts/chromium.sh

# python-redis installs Debian's python3-redis for the README's Python
# example (e2e/readme_test.go) when no python3 here can import redis.
python-redis:
	@scripts/python-redis.sh

# jaeger: the tracing e2e test reads traces back from a real Jaeger v2
# (scripts/jaeger.sh builds it once from its own module and caches it);
# built here so its first build is not charged to the e2e suite's timeout.
jaeger:
	@scripts/jaeger.sh >/dev/null

test: services lint chromium python-redis jaeger
	$(GO) test -race -timeout 20m $(filter-out $(addprefix $(MODULE)/,$(SUITES)),$(shell $(GO) list ./...))
	$(GO) test -race -timeout 20m -p 1 $(addprefix ./,$(SUITES))
	cd deploy && $(GO) test -timeout 15m ./...

# compat runs the e2e, cluster (with Sentinel) and chaos suites, and the
# tests that need WAITAOF, against another server binary: REDIS_SERVER
# (required), REDIS_SENTINEL and REDIS_CLI (default: next to it). Build the
# server yourself from a source tree you provide, e.g. make -C <valkey tree>,
# then make compat REDIS_SERVER=<tree>/src/valkey-server. Like make bench it
# is run and recorded (docs/installation.md), not part of make test.
compat:
	@if [ -z "$(REDIS_SERVER)" ]; then echo "make compat: set REDIS_SERVER=/path/to/valkey-server (see docs/installation.md)" >&2; exit 2; fi
	scripts/services.sh start
	REDIS_SERVER="$(REDIS_SERVER)" REDIS_SENTINEL="$(REDIS_SENTINEL)" REDIS_CLI="$(REDIS_CLI)" GO="$(GO)" scripts/compat.sh

# demo.sh starts Redis and RabbitMQ itself when they are missing, and stops
# what it started when the demo ends.
demo: build
	scripts/demo.sh amqp

demo-kafka: build
	scripts/demo.sh kafka

# demo-intake: a message published with x-delay: 3000 (the delayed-message
# plugin's header) to a plain queue arrives 3 s later through the intake.
demo-intake: build
	scripts/demo.sh intake

# The fault suite builds its own daemon and prints a summary table; go test
# shows a passing package's output only with -v, so the table also goes to
# the file CHAOS_SUMMARY_FILE names, printed here.
chaos: services
	@summary=$$(mktemp); \
	CHAOS_SUMMARY_FILE=$$summary $(GO) test -race -count=1 -timeout 10m -run . ./chaos/...; code=$$?; \
	cat $$summary; rm -f $$summary; exit $$code

# fuzz runs every fuzz target of the module for FUZZTIME each: go test fuzzes
# one target of one package per run. deploy/ is a module of its own.
# FUZZTIME is a count of executions, not a duration: with a duration, Go
# 1.26's fuzz coordinator can fail a target with "context deadline
# exceeded" and no crasher as the time runs out (golang/go#75804).
FUZZTIME ?= 50000x
fuzz:
	@set -e; for file in $$(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^\./deploy/' | sort); do \
		dir=./$$(dirname $${file#./}); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file); do \
			echo "fuzz: $$fn in $$dir for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$dir; \
		done; \
	done

bench: services build
	$(GO) run ./bench -redis-server auto -out bench/results.json

bench-quick: services build
	$(GO) run ./bench -redis-server auto -quick -out bench/results-quick.json

clean:
	rm -rf bin
