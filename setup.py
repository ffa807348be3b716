"""Packaging for scrapyd (``scrapyd-deploy`` builds an egg from this), and the build of the one
compiled module (``scripts/compile.sh`` builds it in place).

Files other than Python modules (the frontier's Lua script) are package data, read through
``importlib.resources`` so that they load from a zipped egg too.
"""

from setuptools import Extension, find_packages, setup

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
    # The SimHash in C: optional, as the Python one gives the same fingerprints where it is not built.
    ext_modules=[Extension("crawler.twins._simhash", ["crawler/twins/_simhash.c"], optional=True)],
    entry_points={"scrapy": ["settings = crawler.settings"]},
    python_requires=">=3.11",
)
