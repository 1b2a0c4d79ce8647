"""The error ``rayop advise`` reports for input it cannot use (exit status 2, nothing guessed)."""

from __future__ import annotations


class AdviseInputError(Exception):
    """The metrics source is unreachable, not Prometheus, or lacks what a verdict needs."""
