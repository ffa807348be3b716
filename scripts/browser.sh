#!/usr/bin/env bash
# Make sure Debian's chromium is installed, for the dashboard's browser test (Playwright drives
# it through its executable; Playwright's own browser downloads are never used).
set -uo pipefail
if command -v chromium >/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing chromium with apt-get" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
command -v chromium >/dev/null || echo "MISSING: chromium is not installed; the browser test will fail." >&2
exit 0
