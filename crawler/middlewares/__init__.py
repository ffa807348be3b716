"""Downloader middlewares."""
