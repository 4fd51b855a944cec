#!/usr/bin/env bash
# Runs staticcheck at the version the project pins, installing it into
# bin/tools from the Go module proxy the first time (a fresh machine has
# none). Arguments go to staticcheck; the default is ./... of the module in
# the current directory.
set -euo pipefail
version=v0.8.2 # staticcheck 2026.2.2: the first release that reads Go 1.26
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin/tools/staticcheck-$version"
if [ ! -x "$bin" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	GOBIN="$tmp" go install "honnef.co/go/tools/cmd/staticcheck@$version"
	mkdir -p "$(dirname "$bin")"
	mv "$tmp/staticcheck" "$bin"
fi
exec "$bin" "${@:-./...}"
