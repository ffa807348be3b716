"""Scrapy extensions."""
