"""Windows with a known right answer, as the fluid model runs them, for the verdict and the rules.

Each scenario runs long enough (30 minutes) for the Prometheus rules' 10-minute windows and
``for:`` to decide, and is read by ``rayop advise`` over the same series, so the two are checked
against the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.advise.fluid_operator import Load

MINUTES = 30


@dataclass(frozen=True)
class Scenario:
    """A load with the verdict and the alert it must give."""

    name: str
    workers: int
    loads: tuple[Load, ...]
    verdict: str
    next_limit: str | None
    alert: str | None
    """The alert that must fire at the end (None: none may)."""


def _steady(load: Load) -> tuple[Load, ...]:
    return (load,) * (MINUTES * 60)


def _then(first: Load, second: Load) -> tuple[Load, ...]:
    half = MINUTES * 60 // 2
    return (first,) * half + (second,) * half


SCENARIOS = (
    Scenario(
        "saturated with a backlog and a calm API",
        workers=1,
        loads=_steady(Load(arrivals=20)),
        verdict="raise",
        next_limit="concurrency",
        alert="RayOperatorWorkersSaturated",
    ),
    Scenario(
        "an API slowdown",
        workers=1,
        loads=_then(Load(arrivals=20), Load(arrivals=20, api_seconds=0.2)),
        verdict="keep",
        next_limit="api-server",
        alert="RayOperatorMoreWorkersWouldContend",
    ),
    Scenario(
        "client throttling",
        workers=1,
        loads=_steady(Load(arrivals=20, throttle_seconds=0.2)),
        verdict="keep",
        next_limit="qps",
        alert="RayOperatorMoreWorkersWouldContend",
    ),
    Scenario(
        "an idle fleet",
        workers=1,
        loads=_steady(Load(arrivals=0.5)),
        verdict="keep",
        next_limit=None,
        alert=None,
    ),
    Scenario(
        "enough workers",
        workers=4,
        loads=_steady(Load(arrivals=20)),
        verdict="keep",
        next_limit=None,
        alert=None,
    ),
)
