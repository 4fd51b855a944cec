#!/bin/sh
# Installs Debian's chromium for the console's browser test
# (console/browser_test.go) when it is missing; quiet and a no-op when
# chromium is already there. Called by `make test`.
set -e
if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
echo "chromium not found: installing it (apt-get install chromium)" >&2
SUDO=
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
