"""Re-crawls: when a page is due again, and what its stored copy lets a visit skip."""
