"""Kubernetes wall-clock timestamps: RFC 3339 in whole seconds, UTC, with a ``Z`` suffix.

Every object the embedded control plane stamps (creation, deletion, conditions, node and
token times) goes through :func:`timestamp`; it caches the string of the current second.
"""

from __future__ import annotations

import time

__all__ = ["now_rfc3339", "timestamp"]

_cache: tuple[int, str] = (-1, "")


def timestamp(t: float) -> str:
    """Returns Unix time ``t`` as Kubernetes prints it, e.g. ``2026-12-01T09:30:00Z``."""
    global _cache
    sec = int(t)
    if _cache[0] != sec:
        _cache = (sec, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec)))
    return _cache[1]


def now_rfc3339() -> str:
    """Returns the current wall-clock time as :func:`timestamp` prints it."""
    return timestamp(time.time())
