#!/bin/sh
# jaeger.sh: prints the path of a Jaeger v2 all-in-one binary (OTLP in, HTTP
# query API out) that the tracing e2e test starts, building it on first use.
#
# The version is pinned by internal/tools/jaeger/go.mod (its own module, so
# Jaeger's dependencies never enter delaybridge's go.mod). The binary is
# cached in JAEGER_CACHE (default: $XDG_CACHE_HOME/delaybridge or
# ~/.cache/delaybridge) under a name that holds the go.sum's hash, so CI
# builds it once and a version bump builds it again.
set -eu

cd "$(dirname "$0")/../internal/tools/jaeger"
cache=${JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/delaybridge}
sum=$(sha256sum go.sum | cut -c1-12)
out=$cache/jaeger-$sum
if [ ! -x "$out" ]; then
	mkdir -p "$cache"
	echo "jaeger.sh: building Jaeger into $out (once; a few minutes)" >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
	mv "$out.tmp" "$out"
fi
echo "$out"
