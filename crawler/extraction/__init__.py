"""What a fetched page says: metadata, visible text, links, robots directives."""

from crawler.extraction.html import HtmlTree, PageData, extract_page, parse_html
from crawler.extraction.robots_directives import RobotsDirectives, parse_robots_directives

__all__ = ["HtmlTree", "PageData", "RobotsDirectives", "extract_page", "parse_html", "parse_robots_directives"]
