"""Scrapy add-ons: settings that change other settings once every source has been read."""
