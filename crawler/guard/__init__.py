"""The address guard: which hosts and addresses a crawl may connect to."""

from crawler.guard.addresses import AddressPolicy, Refusal, literal_address, parse_networks, refusal
from crawler.guard.blocked import BlockedByPolicy

__all__ = ["AddressPolicy", "BlockedByPolicy", "Refusal", "literal_address", "parse_networks", "refusal"]
