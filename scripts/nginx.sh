#!/usr/bin/env bash
# Make sure nginx (Debian's package) is installed: the re-crawl and HTTP/2 tests serve sites with it, as
# a real server answering conditional requests. Only the binary is needed: the tests start
# their own nginx with their own configuration on a loopback address, and stop it by its PID.
set -uo pipefail
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing nginx with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
fi
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "MISSING: nginx is not installed and could not be installed." >&2; exit 3; }
