"""How a job ended, as the process exit status that cron and scrapyd see.

The spider's close reason decides; the table is documented in the README.
"""

from __future__ import annotations

FINISHED = 0
BOOTSTRAP_FAILED = 1
"""Scrapy's own status for a crawl that could not start (a traceback in the log)."""
USAGE = 2
DATABASE_UNREACHABLE = 3
DATABASE_REFUSED = 4
JOB_FAILED = 5
SEEDS_UNREACHABLE = 6
ALREADY_RUNNING = 7
STOPPED = 8
FRONTIER_LOST = 9
REDIS_UNREACHABLE = 10

# Close reasons of the project's components.
REASON_DATABASE_UNREACHABLE = "failed_database_unreachable"
REASON_DATABASE_REFUSED = "failed_database_refused"
REASON_SEEDS_UNREACHABLE = "failed_seeds_unreachable"
REASON_ALREADY_RUNNING = "failed_already_running"
REASON_FRONTIER_LOST = "failed_frontier_lost"

_BY_REASON = {
    REASON_DATABASE_UNREACHABLE: DATABASE_UNREACHABLE,
    REASON_DATABASE_REFUSED: DATABASE_REFUSED,
    REASON_SEEDS_UNREACHABLE: SEEDS_UNREACHABLE,
    REASON_ALREADY_RUNNING: ALREADY_RUNNING,
    REASON_FRONTIER_LOST: FRONTIER_LOST,
    "cancelled_429_streak": JOB_FAILED,
    "closespider_errorcount": JOB_FAILED,
}


def exit_status(reason: str | None, *, unsaved_rows: int = 0) -> int:
    """The exit status of a job closed with ``reason`` (None: it never closed properly)."""
    reason = reason or ""
    if reason in _BY_REASON:
        return _BY_REASON[reason]
    if reason.startswith("failed"):
        return JOB_FAILED
    # Scrapy's CloseSpider extension ends a job at its budgets (closespider_timeout, …): the
    # job did what it was asked. Anything else (shutdown, cancelled) stopped it before its end.
    if reason == "finished" or reason.startswith("closespider_"):
        # Rows that went to the file of unsaved rows are not in the database.
        return DATABASE_UNREACHABLE if unsaved_rows else FINISHED
    return STOPPED


def job_status(reason: str) -> str:
    """The job's ``crawl_jobs.status`` for a close reason, as its exit status says it ended."""
    status = exit_status(reason)
    if status == FINISHED:
        return "finished"
    return "stopped" if status == STOPPED else "failed"
