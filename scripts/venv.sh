#!/usr/bin/env bash
# Create a venv (.venv, or $VENV) and install a requirements file into it when that file has changed.
# Usage: scripts/venv.sh requirements.txt
#        VENV=.venv-pywb scripts/venv.sh requirements-pywb.txt
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=${1:-requirements.txt}
python=${PYTHON:-python3}
venv=${VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  echo "Creating $venv with $($python --version)" >&2
  "$python" -m venv "$venv"
fi
stamp_of() { echo "$venv/.installed-$(basename "$1")"; }
digest_of() { cat "$1" requirements.txt | sha256sum | cut -d' ' -f1; }
if [ "$(cat "$(stamp_of "$requirements")" 2>/dev/null)" != "$(digest_of "$requirements")" ]; then
  echo "Installing $requirements into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  digest_of "$requirements" > "$(stamp_of "$requirements")"
  # A file that includes the runtime requirements (-r requirements.txt) installed them too:
  # ./crawl, run after ./run-tests, has nothing to install.
  if grep -qx -- "-r requirements.txt" "$requirements"; then
    digest_of requirements.txt > "$(stamp_of requirements.txt)"
  fi
fi
