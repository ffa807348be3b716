"""Packaging for scrapyd (``scrapyd-deploy`` builds an egg from this). The egg is Python only:
the compiled modules (the SimHash, the nesting depth and the walk over a document,
``scripts/compile.sh``) are left out, as
an egg loads a compiled module through a stub that needs a writable cache and does not check the
module's Python version; the scrapyd host computes the same in Python.

Files other than Python modules (the frontier's Lua script) are package data, read through
``importlib.resources`` so that they load from a zipped egg too.
"""

from setuptools import find_packages, setup

setup(
    name="crawler",
    version="0.1.0",
    packages=find_packages(include=["crawler", "crawler.*"]),
    # Files read through importlib.resources (also from a zipped egg): the frontier's script,
    # the dashboard's pages.
    package_data={
        "crawler": ["**/*.lua"],
        "crawler.api": ["static/*.html", "static/*.js", "static/*.css", "static/*.svg"],
    },
    entry_points={"scrapy": ["settings = crawler.settings"]},
    python_requires=">=3.11",
)
