"""Packaging for scrapyd (``scrapyd-deploy`` builds an egg from this)."""

from setuptools import find_packages, setup

setup(
    name="crawler",
    version="0.1.0",
    packages=find_packages(include=["crawler", "crawler.*"]),
    # The dashboard's files, read through importlib.resources (also from a zipped egg).
    package_data={"crawler.api": ["static/*.html", "static/*.js", "static/*.css"]},
    entry_points={"scrapy": ["settings = crawler.settings"]},
    python_requires=">=3.11",
)
