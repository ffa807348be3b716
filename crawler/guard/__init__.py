"""The address guard: which hosts and addresses a crawl may connect to."""

from crawler.guard.addresses import AddressPolicy, Refusal, literal_address, parse_networks, refusal

__all__ = ["AddressPolicy", "Refusal", "literal_address", "parse_networks", "refusal"]
