"""What a fetched page says: metadata, visible text, links, robots directives."""

from crawler.extraction.html import PageData, extract_page
from crawler.extraction.robots_directives import RobotsDirectives, parse_robots_directives

__all__ = ["PageData", "RobotsDirectives", "extract_page", "parse_robots_directives"]
