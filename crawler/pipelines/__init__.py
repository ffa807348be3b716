"""Item pipelines."""
