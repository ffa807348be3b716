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
stamp="$venv/.installed-$(basename "$requirements")"
digest=$(cat "$requirements" requirements.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
  echo "Installing $requirements into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  echo "$digest" > "$stamp"
fi
