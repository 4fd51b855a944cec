#!/usr/bin/env bash
# make demo: start Redis and RabbitMQ if missing, run the daemon, schedule a
# few messages 1-5 s ahead, consume them and print each with its lateness,
# then stop everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
sink=${1:-amqp}
# The services' state folder is ours to remove when we made it (each demo
# left an empty one in /tmp).
own_state=
if [ -z "${SERVICES_STATE_DIR:-}" ]; then
	SERVICES_STATE_DIR=$(mktemp -d)
	own_state=$SERVICES_STATE_DIR
fi
export SERVICES_STATE_DIR
cleanup() {
	scripts/services.sh stop
	if [ -n "$own_state" ]; then rmdir "$own_state" 2>/dev/null || true; fi
}
trap cleanup EXIT
scripts/services.sh start
go run ./examples/demo -sink "$sink" -daemon bin/delaybridge -devkafka bin/devkafka
