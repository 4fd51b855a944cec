#!/bin/sh
# build-static.sh OUTPUT: builds the static delaybridge binary into OUTPUT.
#
# This is the Dockerfile's build stage: the image runs this very script, so a
# binary built here is the one the image ships (deploy/dockerfile_test.go
# builds it, checks it is static and starts it). VERSION comes from the
# environment (docker build --build-arg), else from the VERSION file at the
# repository's root, as `make build` stamps it; COMMIT from the environment,
# else git, else unknown; DATE (the build time, RFC 3339 UTC) defaults to now.
set -eu

out=${1:?usage: scripts/build-static.sh OUTPUT}
case $out in
/*) ;;
*) out=$PWD/$out ;;
esac
cd "$(dirname "$0")/.."

version=${VERSION:-$(cat VERSION 2>/dev/null || echo dev)}
commit=${COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
date=${DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}

# CGO_ENABLED=0: no libc, so the binary runs on distroless/static or scratch.
# -trimpath: no build-machine paths in the binary or its stack traces.
# -s -w: no symbol table or DWARF (smaller image; panics still show stacks).
CGO_ENABLED=0 exec go build -trimpath \
	-ldflags "-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date" \
	-o "$out" ./cmd/delaybridge
