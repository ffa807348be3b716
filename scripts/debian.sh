#!/usr/bin/env bash
# Make sure the Debian packages the tests run are installed, with one apt-get where some are
# missing: nginx (a real server for re-crawls and HTTP/2), chromium (the dashboard's browser test;
# Playwright drives it, its own browser downloads are never used), tinyproxy (a real HTTP proxy
# with basic auth), prometheus (a real scraper of /metrics, and promtool for the alert rules), gcc
# and Python's headers (the compiled SimHash, scripts/compile.sh, which the tests expect built;
# Debian's python3 has its headers in python3-dev).
# Only the binaries are needed: the tests start each with their own configuration on a loopback
# address and stop it by its PID.
set -uo pipefail
# program=package, where the package's binary may live outside PATH (sbin)
wanted=(nginx=nginx chromium=chromium tinyproxy=tinyproxy promtool=prometheus gcc=gcc)
installed() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }
headers() {
  "${PYTHON:-python3}" -c 'import os, sysconfig
raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}
missing=()
for pair in "${wanted[@]}"; do
  installed "${pair%%=*}" || missing+=("${pair#*=}")
done
headers || missing+=(python3-dev)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing ${missing[*]} with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
status=0
for pair in "${wanted[@]}"; do
  installed "${pair%%=*}" || { echo "MISSING: ${pair#*=} is not installed and could not be installed." >&2; status=3; }
done
headers || { echo "MISSING: Python's headers (python3-dev) are not installed and could not be." >&2; status=3; }
exit $status
