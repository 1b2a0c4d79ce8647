"""Slows the embedded API server down in the middle of a measured phase (``--api-latency-step``).

The step ``AFTER=SECONDS`` sets the latency added to every non-watch request to ``SECONDS``,
``AFTER`` seconds into the measured phase: the test of an adaptive operator that must shed
workers when its API server slows. Only the in-process plane can change its latency while it
runs; the subprocess and real planes take theirs at start. :func:`reduction_after` reads from
a run's samples how soon an adaptive operator shed workers after the step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rayop.bench.metrics import WorkerSample


class LatencyControl(Protocol):
    """A control plane whose added API latency can change while it runs."""

    def set_api_latency(self, seconds: float) -> None:
        """Adds ``seconds`` to every non-watch request from now on."""


@dataclass(frozen=True, slots=True)
class LatencyStep:
    """Raise the API latency to ``latency`` seconds, ``after`` seconds into the measured phase."""

    after: float
    latency: float

    @classmethod
    def parse(cls, text: str) -> LatencyStep:
        """Parses ``AFTER=SECONDS`` (``20=0.2``).

        Raises:
            ValueError: not two non-negative numbers joined by ``=``.
        """
        after, sep, latency = text.partition("=")
        try:
            step = cls(float(after), float(latency)) if sep else None
        except ValueError:
            step = None
        if step is None or step.after < 0 or step.latency < 0:
            raise ValueError(
                f"--api-latency-step expects AFTER=SECONDS (non-negative numbers), got {text!r}"
            )
        return step

    @property
    def note(self) -> str:
        """The step in words, for the results' notes."""
        return (
            f"API latency raised to {self.latency:g} s at {self.after:g} s into the measured phase"
        )

    async def apply(self, plane: LatencyControl) -> None:
        """Sleeps ``after`` seconds, then sets the plane's latency; cancel it to skip the step."""
        await asyncio.sleep(self.after)
        plane.set_api_latency(self.latency)


def reduction_after(
    samples: Sequence[WorkerSample], at: float
) -> tuple[float | None, float | None]:
    """Returns the worker limit just before ``at`` and how long after ``at`` it first fell.

    Args:
        samples: The run's samples, oldest first (``t`` in seconds of the measured phase).
        at: When the API server was slowed, in the same seconds.

    Returns:
        ``(limit before, seconds until a lower limit was sampled)``; the first is None when no
        sample precedes ``at``, the second when the limit never fell below it.
    """
    before = [s for s in samples if s.t <= at]
    if not before:
        return None, None
    limit = before[-1].max_workers
    fell = next((s.t - at for s in samples if s.t > at and s.max_workers < limit), None)
    return limit, fell
