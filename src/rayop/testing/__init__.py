"""A public test kit for code built on rayop: a virtual clock, an in-memory source, and helpers
that wait for a condition or let the event loop settle.

The kit is part of rayop's API (the project's own tests use it): import from here, not from the
submodules.
"""

from rayop.testing.clock import WALL_START, FakeClock
from rayop.testing.sources import InMemorySource
from rayop.testing.waiting import eventually, settle

__all__ = ["WALL_START", "FakeClock", "InMemorySource", "eventually", "settle"]
