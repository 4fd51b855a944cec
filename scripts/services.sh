#!/usr/bin/env bash
# Ensure the local Redis and RabbitMQ that tests and the demo use are running
# on 127.0.0.1 (6379 and 5672). Installs them from Debian's packages when they
# are missing. `scripts/services.sh stop` stops what this script started.
set -euo pipefail

STATE=${SERVICES_STATE_DIR:-/tmp/delaybridge-services}
mkdir -p "$STATE"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() { # port name seconds
	for _ in $(seq 1 $(($3 * 10))); do
		port_open "$1" && return 0
		sleep 0.1
	done
	echo "services: $2 did not open 127.0.0.1:$1 within $3 s" >&2
	return 1
}

apt_install() {
	if [ "$(id -u)" != 0 ]; then
		echo "services: $* missing and not root: install them (apt-get install $*)" >&2
		exit 1
	fi
	if [ ! -f "$STATE/apt-updated" ]; then
		apt-get update -qq >/dev/null && touch "$STATE/apt-updated"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

start_redis() {
	port_open 6379 && return 0
	command -v redis-server >/dev/null || apt_install redis-server redis-tools
	mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
	redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
		--dir /tmp --logfile "$STATE/redis.log" --pidfile "$STATE/redis.pid"
	touch "$STATE/started-redis"
	wait_port 6379 redis 20
	echo "services: started redis on 127.0.0.1:6379"
}

start_rabbitmq() {
	if port_open 5672; then return 0; fi
	command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
	rabbitmq-server -detached >/dev/null 2>&1 || true
	touch "$STATE/started-rabbitmq"
	wait_port 5672 rabbitmq 120
	# The AMQP port opens a little before the broker accepts logins.
	for _ in $(seq 1 60); do
		rabbitmqctl -q await_startup >/dev/null 2>&1 && break
		sleep 1
	done
	echo "services: started rabbitmq on 127.0.0.1:5672"
}

stop() {
	if [ -f "$STATE/started-redis" ]; then
		redis-cli -p 6379 shutdown nosave >/dev/null 2>&1 || true
		rm -f "$STATE/started-redis"
	fi
	if [ -f "$STATE/started-rabbitmq" ]; then
		rabbitmqctl -q stop >/dev/null 2>&1 || true
		rm -f "$STATE/started-rabbitmq"
	fi
}

case "${1:-start}" in
start)
	start_redis
	start_rabbitmq
	;;
stop) stop ;;
*)
	echo "usage: $0 [start|stop]" >&2
	exit 2
	;;
esac
