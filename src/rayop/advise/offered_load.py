"""The load a before/after comparison holds fixed: the work the users offered, read from a window.

What the users asked for is the load; what the operator did with it is the outcome. No series
of controller-runtime's (the names both rayop and KubeRay export) counts the root kinds' own
watch events: ``workqueue_adds_total`` mixes them with the owned objects' events and the
operator's own requeues, and a queue counts an add only when the key is not queued already, so
fewer workers coalesce more and count fewer adds at the same load (rayop at one cluster a second:
407 adds with 1 worker, 519 with 2, in the same 59 s). What a load asks the operator to make is
fixed, though: every RayCluster the users create asks for its pods and services once, however
fast they come. So the offered load is read from the API creates
(``rest_client_requests_total{method="POST"}``), in one of two ways:

- **A whole burst**: the window began idle (its controllers' queues empty, no worker busy) and
  its creates were over before its end (none in its last ``QUIET_SCRAPES`` scrape intervals).
  It holds every create the burst asked for, all served, so their number is the offered load,
  and the window's length is the operator's own time to serve it: a rate over it measures the
  operator. (rayop, saturated: 7,200 creates in 221 s at 1 worker and in 142 s at 2, 1,955 and
  3,042 a minute: the same 900 clusters served faster.)
- **Otherwise** (a window cut out of a running load, as production's are), creates per minute:
  there both windows see the load at its own pace, and where the operator keeps up its creates
  are the load's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rayop.advise.evidence import Scrape

QUIET_SCRAPES = 2
"""Scrape intervals without a create that end a window holding a whole burst."""


@dataclass(frozen=True, slots=True)
class OfferedLoad:
    """The load one window saw: ``creates``, the API creates (POSTs) over its ``seconds``;
    ``whole_burst``, whether the window began idle and served all its load before its end (then
    ``creates`` is the load); and for a whole burst ``served_in``, the seconds from the window's
    start to the scrape that saw its last create (the time the operator took to serve it)."""

    creates: float
    seconds: float
    whole_burst: bool
    served_in: float | None = None

    @property
    def per_minute(self) -> float:
        """API creates per minute of the window (0 for a window of no length)."""
        return 60.0 * self.creates / self.seconds if self.seconds > 0 else 0.0

    def text(self) -> str:
        """The measure in words, for a reason."""
        if self.whole_burst:
            return f"{self.creates:.0f} API creates in all"
        return f"{self.per_minute:.1f} API creates/min"


def _creates(scrape: Scrape) -> float:
    return scrape.snapshot.total("rest_client_requests_total", method="POST")


def _began_idle(window: Sequence[Scrape], controllers: Sequence[str]) -> bool:
    first = window[0].snapshot
    return all(
        first.total("workqueue_depth", name=c) == 0
        and first.total("controller_runtime_active_workers", controller=c) == 0
        for c in controllers
    )


def offered_load(window: Sequence[Scrape], controllers: Sequence[str]) -> OfferedLoad:
    """Reads the load ``window`` (at least two scrapes) saw."""
    creates = _creates(window[-1]) - _creates(window[0])
    served = (
        len(window) > QUIET_SCRAPES + 1
        and _creates(window[-1 - QUIET_SCRAPES]) == _creates(window[-1])
        and creates > 0
    )
    whole = served and _began_idle(window, controllers)
    final = _creates(window[-1])
    done = next(s.t for s in window if _creates(s) == final) if whole else None
    return OfferedLoad(
        creates=creates,
        seconds=window[-1].t - window[0].t,
        whole_burst=whole,
        served_in=None if done is None else done - window[0].t,
    )
