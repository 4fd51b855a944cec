#!/bin/sh
# Installs Debian's python3-redis for the README's Python example
# (e2e/readme_test.go runs it) when no python3 here can import redis;
# quiet and a no-op when one can. Called by `make test`.
set -e
for py in python3 /usr/bin/python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import redis' >/dev/null 2>&1; then
		exit 0
	fi
done
echo "python3's redis module not found: installing it (apt-get install python3-redis)" >&2
SUDO=
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-redis >/dev/null
/usr/bin/python3 -c 'import redis'
