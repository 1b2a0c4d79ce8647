"""Decides a controller's worker limit from its own signals: AIMD on a latency gradient.

The law is additive increase, multiplicative decrease (Chiu & Jain, "Analysis of the Increase
and Decrease Algorithms for Congestion Avoidance in Computer Networks", 1989; Jacobson,
"Congestion Avoidance and Control", SIGCOMM 1988), driven as TCP Vegas drives its window
(Brakmo & Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global Internet", IEEE JSAC
1995) and as Netflix's concurrency-limits ``VegasLimit`` drives a server's limit: by the ratio
of the recent request latency to the base latency (the lowest seen). As in Vegas, latency is
judged by the queueing it implies, ``limit * (1 - base / recent)``: how many of this
controller's requests wait at the API server beyond what an unloaded server would take. Twice
the workers at twice the latency is the server's capacity reached, not a reason to stop at one
worker; ten workers at five times the latency is contention.

Every window (a few seconds of the controller's metrics), in this order:

1. **Decrease** (multiplicative, ``limit * decrease_factor``, at least one worker) when the
   API server's share of request latency (client throttling excluded) implies more than
   ``queued_to_shrink`` requests queued and is ``latency_floor`` seconds above its base, or the client
   token-bucket wait per request reached ``throttle_shrink``, or reconcile errors reached
   ``error_shrink`` of reconciles. At most once per ``cooldown`` windows, so one slow spell
   does not drop the limit to the floor before the first decrease has taken effect.
2. **Idle decrease** (one worker) when the workers were all busy less than ``idle_busy`` of the
   time and nothing waited, for ``idle_after`` windows in a row.
3. **Increase** (one worker; twice the workers during slow start, as TCP's slow start does,
   until the first decrease) when all workers were busy at least ``busy_to_grow`` of the time,
   items waited in the queue (and the mean wait reached ``queue_wait_to_grow`` or grew), API
   latency implied fewer than ``queued_to_grow`` requests queued, throttling below ``throttle_hold`` and
   errors below ``error_hold``, for ``grow_after`` windows in a row.

Hysteresis keeps a steady signal from making the limit oscillate: the thresholds to grow are
stricter than the thresholds to shrink (a dead band in which the limit holds), a grow needs
consecutive windows, no grow follows a decrease within ``cooldown`` windows, and a limit at
which latency or errors once rose is not probed again for ``probe_after`` windows, a wait that
doubles (up to ``probe_max``) each time the probe meets congestion again, and returns to
``probe_after`` once the workers idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    """What one controller measured over one window."""

    seconds: float
    busy_fraction: float
    """Fraction of the window in which every permitted worker was reconciling."""
    queue_depth: float
    """Items waiting at the end of the window."""
    queue_wait_mean: float | None
    """Mean time the items handed out in the window had waited (None: none handed out)."""
    api_latency_mean: float | None
    """Mean request latency minus the client's token-bucket wait (None: no request)."""
    throttle_wait_mean: float | None
    """Mean token-bucket wait per request (None: no request or no client limiter)."""
    reconciles: int = 0
    errors: int = 0

    @property
    def error_share(self) -> float:
        """Reconcile errors per reconcile in the window (0 when none ran)."""
        return self.errors / self.reconciles if self.reconciles else 0.0


@dataclass(frozen=True, slots=True)
class LawSettings:
    """The law's bounds and thresholds (defaults suit 2 s windows)."""

    floor: int = 1
    ceiling: int = 16
    busy_to_grow: float = 0.9
    queue_wait_to_grow: float = 0.5
    grow_after: int = 2
    queued_to_grow: float = 3.0
    """Vegas' alpha: grow only while latency implies fewer requests queued than this."""
    queued_to_shrink: float = 6.0
    """Vegas' beta: shrink when latency implies more requests queued than this."""
    latency_floor: float = 0.02
    throttle_hold: float = 0.05
    throttle_shrink: float = 0.25
    error_hold: float = 0.02
    error_shrink: float = 0.1
    decrease_factor: float = 0.75
    idle_busy: float = 0.25
    idle_after: int = 10
    cooldown: int = 3
    slow_start: bool = True
    """Double the limit on each increase until the first decrease (TCP's slow start)."""
    probe_after: int = 30
    probe_max: int = 480
    base_alpha: float = 0.05
    """How fast the base latency follows a higher latency while it implies little queueing (it
    follows a lower one at once)."""
    recent_alpha: float = 0.5
    """Smoothing of the recent latency (an exponential moving average)."""

    def __post_init__(self) -> None:
        if not 1 <= self.floor <= self.ceiling:
            raise ValueError(f"need 1 <= floor ({self.floor}) <= ceiling ({self.ceiling})")
        if not 0 < self.decrease_factor < 1:
            raise ValueError(f"decrease_factor {self.decrease_factor} is not in (0, 1)")


@dataclass(frozen=True, slots=True)
class Decision:
    """The limit after a window, and why it changed (``reason`` is None when it did not)."""

    limit: int
    previous: int
    reason: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the limit moved."""
        return self.limit != self.previous


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.0f} ms"


class GradientAimd:
    """The law's state: the limit, the base and recent latency, and the hysteresis counters.

    Args:
        settings: Bounds and thresholds.
        start: The first limit (clamped to the bounds); default: the floor.
    """

    def __init__(self, settings: LawSettings | None = None, start: int | None = None) -> None:
        self.settings = settings or LawSettings()
        s = self.settings
        self.limit = min(s.ceiling, max(s.floor, s.floor if start is None else start))
        self.base_latency: float | None = None
        self.recent_latency: float | None = None
        self._grow_streak = 0
        self._idle_streak = 0
        self._since_decrease = s.cooldown
        self._congested_at: int | None = None
        self._since_congested = 2 * s.probe_max
        self._probe_wait = s.probe_after
        self._last_wait: float | None = None
        self._slow_start = s.slow_start

    def update(self, w: Window) -> Decision:
        """Folds one window into the state and returns the limit to run with next."""
        self._track_latency(w.api_latency_mean)
        self._since_decrease += 1
        self._since_congested += 1
        if self._congested_at is not None and self._since_congested >= self._probe_wait:
            self._congested_at = None
        before = self.limit
        reason = self._decrease(w) or self._idle(w) or self._grow(w)
        self._last_wait = w.queue_wait_mean
        return Decision(self.limit, before, reason if self.limit != before else None)

    def _track_latency(self, latency: float | None) -> None:
        if latency is None:
            return
        s = self.settings
        recent = self.recent_latency
        self.recent_latency = (
            latency if recent is None else recent + s.recent_alpha * (latency - recent)
        )
        base = self.base_latency
        if base is None or self.recent_latency < base:
            self.base_latency = self.recent_latency
        elif self.queued() < s.queued_to_grow:  # noise, not queueing: let the base follow
            self.base_latency = base + s.base_alpha * (self.recent_latency - base)

    def _latency_rose(self) -> bool:
        base, recent, s = self.base_latency, self.recent_latency, self.settings
        if base is None or recent is None:
            return False
        return self.queued() > s.queued_to_shrink and recent - base >= s.latency_floor

    def _latency_flat(self) -> bool:
        base, recent, s = self.base_latency, self.recent_latency, self.settings
        if base is None or recent is None:
            return True
        return self.queued() < s.queued_to_grow or recent - base < s.latency_floor

    def queued(self) -> float:
        """Requests the latency implies are queued at the API server: ``limit * (1 - base/recent)``."""
        base, recent = self.base_latency, self.recent_latency
        if base is None or recent is None or recent <= base:
            return 0.0
        return self.limit * (1 - base / recent)

    def _congestion(self, w: Window) -> str | None:
        s = self.settings
        if self._latency_rose():
            return (
                f"API latency rose to {_ms(self.recent_latency)} from a base of "
                f"{_ms(self.base_latency)} (throttling excluded), about {self.queued():.1f} "
                "requests queued at the API server"
            )
        if w.throttle_wait_mean is not None and w.throttle_wait_mean >= s.throttle_shrink:
            return f"client throttling wait reached {_ms(w.throttle_wait_mean)} per request"
        if w.error_share >= s.error_shrink:
            return (
                f"reconcile errors reached {w.error_share:.0%} of reconciles "
                f"({w.errors} of {w.reconciles})"
            )
        return None

    def _decrease(self, w: Window) -> str | None:
        s = self.settings
        cause = self._congestion(w)
        if cause is None:
            return None
        self._grow_streak = 0
        self._idle_streak = 0
        if self.limit <= s.floor or self._since_decrease < s.cooldown:
            return None
        old = self.limit
        self._slow_start = False
        self.limit = max(s.floor, min(old - 1, math.floor(old * s.decrease_factor)))
        if self._since_congested < 2 * self._probe_wait:  # congestion recurred soon: probe later
            self._probe_wait = min(s.probe_max, 2 * self._probe_wait)
        self._since_decrease = 0
        self._congested_at = old
        self._since_congested = 0
        return f"{cause}: {old} -> {self.limit} workers"

    def _idle(self, w: Window) -> str | None:
        s = self.settings
        if w.busy_fraction >= s.idle_busy or w.queue_depth > 0:
            self._idle_streak = 0
            return None
        self._grow_streak = 0
        self._idle_streak += 1
        if self._idle_streak < s.idle_after or self.limit <= s.floor:
            return None
        self._idle_streak = 0
        self._probe_wait = s.probe_after
        old = self.limit
        self.limit -= 1
        return (
            f"workers all busy only {w.busy_fraction:.0%} of the time and nothing queued for "
            f"{s.idle_after} windows: {old} -> {self.limit} workers"
        )

    def _grow(self, w: Window) -> str | None:
        s = self.settings
        wait = w.queue_wait_mean or 0.0
        waits = w.queue_depth > 0 and (
            wait >= s.queue_wait_to_grow or (self._last_wait is not None and wait > self._last_wait)
        )
        calm = (
            self._latency_flat()
            and (w.throttle_wait_mean or 0.0) < s.throttle_hold
            and w.error_share < s.error_hold
        )
        probing_blocked = self._congested_at is not None and self.limit + 1 >= self._congested_at
        if not (w.busy_fraction >= s.busy_to_grow and waits and calm) or probing_blocked:
            self._grow_streak = 0
            return None
        self._grow_streak += 1
        if (
            self._grow_streak < s.grow_after
            or self._since_decrease < s.cooldown
            or self.limit >= s.ceiling
        ):
            return None
        self._grow_streak = 0
        old = self.limit
        step = old if self._slow_start else 1
        self.limit = min(s.ceiling, old + step)
        return (
            f"workers all busy {w.busy_fraction:.0%} of the time, {w.queue_depth:.0f} queued "
            f"(mean wait {wait:.2f} s), API latency {_ms(self.recent_latency)} (base "
            f"{_ms(self.base_latency)}), throttling {_ms(w.throttle_wait_mean)}, errors "
            f"{w.error_share:.0%}: {old} -> {self.limit} workers"
            + (" (slow start: doubling until the first congestion)" if self._slow_start else "")
        )
