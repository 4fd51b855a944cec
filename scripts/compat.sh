#!/usr/bin/env bash
# make compat: runs the suites that start servers of their own or lean on
# the server's behaviour (e2e, cluster with its Sentinel tests, chaos) and
# the tests that need a server with WAITAOF against another server binary
# than the machine's Redis, e.g. Valkey built from a source tree you provide
# (docs/installation.md):
#
#   make -C <valkey tree>
#   make compat REDIS_SERVER=<tree>/src/valkey-server
#
# REDIS_SERVER is required. REDIS_SENTINEL and REDIS_CLI default to the
# valkey-sentinel/redis-sentinel and valkey-cli/redis-cli next to it (else
# the server run with --sentinel, and redis-cli on PATH). The server under
# test is a private one on COMPAT_PORT (default 6479) standing in for the
# shared test Redis, and a three-master cluster on COMPAT_CLUSTER_PORTS
# (default "7201 7202 7203"): the machine's Redis and its cluster are not
# touched. RabbitMQ is the shared one (make services). Both are stopped on
# every exit. COMPAT_SUITES (default "e2e cluster chaos") picks suites;
# COMPAT_TESTFLAGS (default -race) are go test's flags.
set -euo pipefail

if [ -z "${REDIS_SERVER:-}" ]; then
	echo "compat: REDIS_SERVER is not set: make compat REDIS_SERVER=/path/to/valkey-server (see docs/installation.md)" >&2
	exit 2
fi
command -v "$REDIS_SERVER" >/dev/null || {
	echo "compat: REDIS_SERVER=$REDIS_SERVER is not an executable" >&2
	exit 2
}
REDIS_SERVER=$(command -v "$REDIS_SERVER")
bindir=$(dirname "$REDIS_SERVER")
if [ -z "${REDIS_SENTINEL:-}" ]; then
	for b in valkey-sentinel redis-sentinel; do
		[ -x "$bindir/$b" ] && REDIS_SENTINEL=$bindir/$b && break
	done
fi
if [ -z "${REDIS_CLI:-}" ]; then
	REDIS_CLI=redis-cli
	for b in valkey-cli redis-cli; do
		[ -x "$bindir/$b" ] && REDIS_CLI=$bindir/$b && break
	done
fi
export REDIS_SERVER REDIS_SENTINEL="${REDIS_SENTINEL:-}" REDIS_CLI

GO=${GO:-go}
PORT=${COMPAT_PORT:-6479}
CLUSTER_PORTS=${COMPAT_CLUSTER_PORTS:-7201 7202 7203}
SUITES=${COMPAT_SUITES:-e2e cluster chaos}
FLAGS=${COMPAT_TESTFLAGS:--race}
DIR=$(mktemp -d /tmp/delaybridge-compat.XXXXXX)

export DELAYBRIDGE_CLUSTER_PORTS=$CLUSTER_PORTS DELAYBRIDGE_CLUSTER_DIR=$DIR/cluster

cleanup() {
	"$REDIS_CLI" -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
	scripts/redis-cluster.sh stop >/dev/null 2>&1 || true
	rm -rf "$DIR"
}
trap cleanup EXIT

if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
	echo "compat: 127.0.0.1:$PORT is taken (COMPAT_PORT)" >&2
	exit 1
fi
"$REDIS_SERVER" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
	--daemonize yes --logfile "$DIR/server.log" --pidfile "$DIR/server.pid"
for _ in $(seq 1 100); do
	"$REDIS_CLI" -p "$PORT" ping 2>/dev/null | grep -q PONG && break
	sleep 0.1
done
scripts/redis-cluster.sh start

export DELAYBRIDGE_TEST_REDIS_URL=redis://127.0.0.1:$PORT/0
export DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS
DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS=$(scripts/redis-cluster.sh addrs)
echo "compat: $("$REDIS_SERVER" --version)"
echo "compat: sentinel ${REDIS_SENTINEL:-$REDIS_SERVER --sentinel}, cli $REDIS_CLI, suites: $SUITES"

code=0
# The scripts' packages (their tests run every script under the guard that
# refuses undeclared keys, internal/luakeys) and the tests that need
# WAITAOF (make test skips them on a server without it), on this server.
$GO test $FLAGS -count=1 -timeout 15m ./queue ./flowstate ./internal/luakeys || code=1
$GO test $FLAGS -count=1 -timeout 15m -run 'WaitAOF' ./internal/cli || code=1
for s in $SUITES; do
	$GO test $FLAGS -count=1 -timeout 30m -p 1 "./$s/..." || code=1
done
exit $code
