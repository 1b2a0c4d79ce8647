"""Session-wide test setup: no event loop is ever created behind a test's back.

pytest-asyncio (1.5) saves "the current event loop" around every async test by calling
``asyncio.get_event_loop()``, which, while no loop has ever been set in the main thread,
creates one; that loop is restored after the test and never closed, and when a later test
drops it, its ``__del__`` warns (``ResourceWarning: unclosed event loop`` and its unclosed
self-pipe sockets), which the warnings-are-errors setting turns into a failure of whatever test
is running then (pytest-dev/pytest-asyncio#724). Marking the main thread's loop as explicitly
unset makes ``get_event_loop()`` raise instead, which pytest-asyncio handles; every async test
still runs on a loop of its own, created and closed by pytest-asyncio.
"""

from __future__ import annotations

import asyncio

import pytest


def pytest_sessionstart(session: pytest.Session) -> None:
    """Sets "no current event loop" in the main thread before any test runs."""
    del session
    asyncio.set_event_loop(None)
