#!/usr/bin/env bash
# Installs redis-server (for the benchmark's side-by-side run of BullMQ) when it is missing.
#
# Order of preference:
#   1. $REDIS_SERVER (a redis-server binary of the user's own)
#   2. redis-server on PATH (Debian's package `redis-server` puts it in /usr/bin)
#   3. as root: apt-get install -y redis-server; otherwise print the command and exit 1.
# The package's own service is not used: the bench starts its own server on a free loopback port.
set -euo pipefail

if [ -n "${REDIS_SERVER:-}" ]; then
  if [ -x "$REDIS_SERVER" ]; then
    echo "redis: found $REDIS_SERVER"
    exit 0
  fi
  echo "redis: REDIS_SERVER=$REDIS_SERVER is not an executable file." >&2
  exit 1
fi

if command -v redis-server >/dev/null 2>&1; then
  echo "redis: found $(command -v redis-server)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "redis: redis-server not installed and this is not a Debian/Ubuntu system." >&2
  echo "redis: install Redis 6.2+ and put redis-server on PATH, or set REDIS_SERVER to its path." >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "redis: redis-server not installed. Install it with:" >&2
  echo "    sudo apt-get update && sudo apt-get install -y redis-server" >&2
  echo "redis: or set REDIS_SERVER to a redis-server binary." >&2
  exit 1
fi

echo "redis: installing Debian package 'redis-server' (once)..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends redis-server >/dev/null
if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis: apt-get finished but redis-server is still not on PATH." >&2
  exit 1
fi
echo "redis: installed"
