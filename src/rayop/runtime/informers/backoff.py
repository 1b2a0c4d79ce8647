"""Jittered exponential backoff between reflector list/watch attempts.

The reflector's backoff in client-go's ``tools/cache/reflector.go`` (kubernetes/client-go).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rayop.runtime.clock import MONOTONIC, Clock


@dataclass(frozen=True, slots=True)
class BackoffSettings:
    """How long to wait between failed attempts."""

    initial: float = 0.8
    """First delay in seconds."""
    factor: float = 2.0
    """Multiplier applied after each wait."""
    jitter: float = 1.0
    """A wait lasts ``d + random() * jitter * d``."""
    cap: float = 30.0
    """Largest ``d`` (so with jitter 1.0 the steady state is [30, 60) s)."""
    reset_after: float = 120.0
    """``d`` returns to ``initial`` when the last wait began this long ago."""


DEFAULT_BACKOFF = BackoffSettings()
"""The reflector's backoff (client-go's defaults)."""


class Backoff:
    """Tracks the next delay and sleeps it; one instance per retry loop."""

    def __init__(
        self,
        settings: BackoffSettings = DEFAULT_BACKOFF,
        *,
        clock: Clock = MONOTONIC,
        rng: random.Random | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        self._rng = rng or random.Random()
        self._delay = settings.initial
        self._last_start: float | None = None

    def next_delay(self) -> float:
        """Returns the next jittered delay and advances the schedule; never blocks."""
        s = self._settings
        now = self._clock.now()
        if self._last_start is not None and now - self._last_start > s.reset_after:
            self._delay = s.initial
        self._last_start = now
        base = self._delay
        self._delay = min(base * s.factor, s.cap)
        return base + self._rng.random() * s.jitter * base

    async def wait(self) -> float:
        """Blocks for the next delay; returns how long it slept."""
        delay = self.next_delay()
        await self._clock.sleep(delay)
        return delay
