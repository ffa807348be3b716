"""Backpressure on discovered URLs (seed 002's ingestion controls): how many new URLs the pages of
one site may add to the frontier a second, kept in the process or shared through Redis."""
