#!/usr/bin/env bash
# make demo: start Redis and RabbitMQ if missing, run the daemon, schedule a
# few messages 1-5 s ahead, consume them and print each with its lateness,
# then stop everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
sink=${1:-amqp}
export SERVICES_STATE_DIR=${SERVICES_STATE_DIR:-$(mktemp -d)}
cleanup() { scripts/services.sh stop; }
trap cleanup EXIT
scripts/services.sh start
go run ./examples/demo -sink "$sink" -daemon bin/delaybridge -devkafka bin/devkafka
