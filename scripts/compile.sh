#!/usr/bin/env bash
# Build the compiled SimHash (crawler/twins/_simhash.c) in place for the venv's Python, when it is
# missing, older than its source or does not load. Where it cannot be built (no C compiler,
# Python's headers or setuptools; a read-only checkout) the crawl uses the Python SimHash: the
# same fingerprints, about 0.2 ms more CPU a page; this says so and does not fail. (Not in
# setup.py: scrapyd's eggs stay Python only.)
# Usage: scripts/compile.sh   (./crawl and ./run-tests call it)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${VENV:-.venv}/bin/python
source=crawler/twins/_simhash.c
built=crawler/twins/_simhash$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# Loaded from its file, not through the package (whose import loads Scrapy).
loads() {
  "$python" -c 'import importlib.util as u, sys
spec = u.spec_from_file_location("crawler.twins._simhash", sys.argv[1])
spec.loader.exec_module(u.module_from_spec(spec))' "$built"
}
if [ "$built" -nt "$source" ] && loads 2>/dev/null; then
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --force: setuptools would otherwise keep its copy in build/ and leave a broken one in place.
if "$python" - >"$log" 2>&1 <<'PY' && loads 2>>"$log"; then
from setuptools import Extension, setup

setup(
    name="crawler-simhash",
    script_args=["--quiet", "build_ext", "--inplace", "--force", "--build-temp", "build/simhash"],
    ext_modules=[Extension("crawler.twins._simhash", ["crawler/twins/_simhash.c"])],
)
PY
  exit 0
fi
echo "NOTE: the compiled SimHash could not be built (it needs a C compiler, Python's headers," \
  "setuptools and a writable checkout); the crawl computes it in Python, with the same fingerprints," \
  "about 0.2 ms more CPU a page:" >&2
tail -5 "$log" >&2
