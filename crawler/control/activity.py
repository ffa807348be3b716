"""What each domain saw in this process since the last snapshot: answers, errors, 429s."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class DomainCounts:
    pages: int = 0
    """HTTP answers, whatever their status."""
    errors: int = 0
    """5xx answers and requests that got no answer."""
    responses_429: int = 0


class DomainActivity:
    def __init__(self) -> None:
        self._counts: dict[str, DomainCounts] = {}
        self._answered: set[int] = set()

    def answered(self, domain: str, request_id: int, status: int) -> None:
        counts = self.counts(domain)
        counts.pages += 1
        counts.errors += status >= 500
        counts.responses_429 += status == 429
        self._answered.add(request_id)

    def left(self, domain: str, request_id: int) -> None:
        """A request left the downloader; without an answer it is an error."""
        if request_id in self._answered:
            self._answered.discard(request_id)
        else:
            self.counts(domain).errors += 1

    def counts(self, domain: str) -> DomainCounts:
        """The domain's counts, marking it changed."""
        counts = self._counts.get(domain)
        if counts is None:
            counts = self._counts[domain] = DomainCounts()
        return counts

    def take(self) -> dict[str, DomainCounts]:
        """The changed domains and their counts since the last call."""
        taken, self._counts = self._counts, {}
        return taken
