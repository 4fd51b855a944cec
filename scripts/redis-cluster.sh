#!/usr/bin/env bash
# Start or stop a local Redis Cluster of three masters (no replicas) on
# 127.0.0.1, for the tests in cluster/ (DELAYBRIDGE_TEST_REDIS_CLUSTER_ADDRS).
#
#   scripts/redis-cluster.sh start   # idempotent: a healthy cluster is left alone
#   scripts/redis-cluster.sh stop    # stops the nodes this script started
#   scripts/redis-cluster.sh addrs   # prints the comma list of node addresses
#
# Ports: DELAYBRIDGE_CLUSTER_PORTS (default "7101 7102 7103"); each node also
# uses its cluster bus port, port+10000. Nothing is persisted: every start of
# stopped nodes begins with an empty cluster. Installs redis-server and
# redis-tools from Debian's packages when they are missing.
#
# REDIS_SERVER and REDIS_CLI name other binaries (make compat: Valkey's
# valkey-server and valkey-cli, see docs/installation.md); nothing is
# installed for them.
set -euo pipefail

SERVER=${REDIS_SERVER:-redis-server}
CLIBIN=${REDIS_CLI:-redis-cli}

PORTS=(${DELAYBRIDGE_CLUSTER_PORTS:-7101 7102 7103})
DIR=${DELAYBRIDGE_CLUSTER_DIR:-/tmp/delaybridge-redis-cluster}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cli() { # port args...
	local p=$1
	shift
	"$CLIBIN" -h 127.0.0.1 -p "$p" "$@"
}

info_field() { # port field
	cli "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"
}

apt_install() {
	if [ "$(id -u)" != 0 ]; then
		echo "redis-cluster: $* missing and not root: install them (apt-get install $*)" >&2
		exit 1
	fi
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

addrs() {
	local out=() p
	for p in "${PORTS[@]}"; do out+=("127.0.0.1:$p"); done
	(IFS=,; echo "${out[*]}")
}

start_node() { # port
	local p=$1 d="$DIR/$1"
	if port_open "$p"; then
		if ! cli "$p" info cluster 2>/dev/null | grep -q 'cluster_enabled:1'; then
			echo "redis-cluster: 127.0.0.1:$p is taken by something that is not a cluster-enabled Redis" >&2
			exit 1
		fi
		return 0
	fi
	if port_open $((p + 10000)); then
		echo "redis-cluster: cluster bus port 127.0.0.1:$((p + 10000)) is taken" >&2
		exit 1
	fi
	rm -rf "$d" # a stale nodes.conf would name a cluster that no longer exists
	mkdir -p "$d"
	"$SERVER" --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
		--cluster-config-file "$d/nodes.conf" --cluster-node-timeout 5000 \
		--save "" --appendonly no --dir "$d" --daemonize yes \
		--logfile "$d/redis.log" --pidfile "$d/redis.pid"
	touch "$d/started"
	for _ in $(seq 1 100); do
		cli "$p" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.1
	done
	echo "redis-cluster: node 127.0.0.1:$p did not answer within 10 s (log: $d/redis.log)" >&2
	exit 1
}

healthy() { # every node sees the whole cluster with every hash slot served
	local p
	for p in "${PORTS[@]}"; do
		[ "$(info_field "$p" cluster_state)" = ok ] || return 1
		[ "$(info_field "$p" cluster_slots_ok)" = 16384 ] || return 1
		[ "$(info_field "$p" cluster_known_nodes)" = "${#PORTS[@]}" ] || return 1
	done
}

create() {
	local p nodes=()
	for p in "${PORTS[@]}"; do
		# A half-made cluster (an earlier create cut short) is started over.
		if [ "$(info_field "$p" cluster_known_nodes)" != 1 ] || [ "$(info_field "$p" cluster_slots_assigned)" != 0 ]; then
			cli "$p" flushall >/dev/null
			cli "$p" cluster reset hard >/dev/null
		fi
		nodes+=("127.0.0.1:$p")
	done
	"$CLIBIN" --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$DIR/create.log" 2>&1 || {
		cat "$DIR/create.log" >&2
		echo "redis-cluster: cluster create failed" >&2
		exit 1
	}
}

start() {
	if [ -z "${REDIS_SERVER:-}${REDIS_CLI:-}" ]; then
		command -v redis-server >/dev/null && command -v redis-cli >/dev/null || apt_install redis-server redis-tools
	fi
	for b in "$SERVER" "$CLIBIN"; do
		command -v "$b" >/dev/null || {
			echo "redis-cluster: $b not found (REDIS_SERVER, REDIS_CLI)" >&2
			exit 1
		}
	done
	mkdir -p "$DIR"
	local p
	for p in "${PORTS[@]}"; do start_node "$p"; done
	if healthy; then
		return 0
	fi
	create
	for _ in $(seq 1 300); do
		if healthy; then
			echo "redis-cluster: cluster_state:ok on $(addrs)"
			return 0
		fi
		sleep 0.1
	done
	for p in "${PORTS[@]}"; do
		echo "127.0.0.1:$p: $(cli "$p" cluster info 2>&1 | tr -d '\r' | grep -E 'state|slots_ok|known_nodes' | tr '\n' ' ')" >&2
	done
	echo "redis-cluster: cluster not ok within 30 s" >&2
	exit 1
}

stop() {
	local p
	for p in "${PORTS[@]}"; do
		if [ -f "$DIR/$p/started" ]; then
			cli "$p" shutdown nosave >/dev/null 2>&1 || true
			for _ in $(seq 1 50); do
				port_open "$p" || break
				sleep 0.1
			done
			rm -rf "${DIR:?}/$p"
		fi
	done
	rm -f "$DIR/create.log"
	rmdir "$DIR" 2>/dev/null || true
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
addrs) addrs ;;
*)
	echo "usage: $0 [start|stop|addrs]" >&2
	exit 2
	;;
esac
