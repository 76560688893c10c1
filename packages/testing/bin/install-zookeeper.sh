#!/usr/bin/env bash
# Installs Apache ZooKeeper's server jars when they are missing.
#
# Order of preference:
#   1. $ZOOKEEPER_HOME (a user's own install: lib/*.jar or *.jar inside it)
#   2. Debian's package `zookeeper` (/usr/share/java/zookeeper.jar)
#   3. as root: apt-get install -y zookeeper; otherwise print the command and exit 1.
# Java 17 is expected on PATH (Debian's zookeeper package pulls in a runtime if it is not).
set -euo pipefail

have_jars() {
  if [ -n "${ZOOKEEPER_HOME:-}" ]; then
    compgen -G "$ZOOKEEPER_HOME/lib/zookeeper-*.jar" >/dev/null || compgen -G "$ZOOKEEPER_HOME/zookeeper-*.jar" >/dev/null
  else
    [ -f /usr/share/java/zookeeper.jar ]
  fi
}

if have_jars; then
  echo "zookeeper: found ${ZOOKEEPER_HOME:-/usr/share/java/zookeeper.jar}"
  exit 0
fi

if [ -n "${ZOOKEEPER_HOME:-}" ]; then
  echo "zookeeper: ZOOKEEPER_HOME=$ZOOKEEPER_HOME holds no zookeeper-*.jar (looked in \$ZOOKEEPER_HOME/lib and \$ZOOKEEPER_HOME)." >&2
  echo "zookeeper: point ZOOKEEPER_HOME at an unpacked Apache ZooKeeper 3.6+ binary release, or unset it to use Debian's package." >&2
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "zookeeper: not installed and this is not a Debian/Ubuntu system." >&2
  echo "zookeeper: install an Apache ZooKeeper 3.6+ binary release and set ZOOKEEPER_HOME to its folder." >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "zookeeper: not installed. Install it with:" >&2
  echo "    sudo apt-get update && sudo apt-get install -y zookeeper" >&2
  echo "zookeeper: or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release." >&2
  exit 1
fi

echo "zookeeper: installing Debian package 'zookeeper' (once; it starts no service)..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
if ! have_jars; then
  echo "zookeeper: apt-get finished but /usr/share/java/zookeeper.jar is still missing." >&2
  exit 1
fi
echo "zookeeper: installed"
