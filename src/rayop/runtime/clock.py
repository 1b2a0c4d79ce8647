"""Time as an injected dependency for the controller machinery.

Everything in :mod:`rayop.runtime` that reads the time, sleeps, backs off or expires something
takes a :class:`Clock` (defined in :mod:`rayop.kube.clock`, the layer below, and re-exported
here). Production code uses :data:`MONOTONIC`; tests use :class:`rayop.testing.FakeClock`, whose
time only moves when the test steps it, or run on the real clock under looptime's virtual
event-loop time.
"""

from __future__ import annotations

from rayop.kube.clock import MONOTONIC, Clock, MonotonicClock, micro_time

__all__ = ["MONOTONIC", "Clock", "MonotonicClock", "micro_time"]
