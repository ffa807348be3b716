"""Signals of the politeness engine, sent through the crawler's signal manager."""

domain_blocked = object()
"""A domain answered 429 (or 403/503): ``domain``, ``outcome`` (a policy ``Outcome``)."""
