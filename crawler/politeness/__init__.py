"""Politeness: the adaptive per-domain delay policy and where its state lives."""
