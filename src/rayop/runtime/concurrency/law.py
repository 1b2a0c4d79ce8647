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

1. **Rebase** when a decrease on latency did not bring the latency down: over the windows
   after it, the mean latency is still at least ``rebase_share`` of the latency of the window
   that decided it. Fewer workers did not help, so the rise was not this controller's load (an
   API server slowed by something else): the recent latency becomes the base, the limit at
   which it rose may be probed again at once, and slow start resumes (a new path is probed as
   the first one was). Vegas' known weakness is a base that never rises after a lasting change
   of the path; this is its remedy. The judgement is clocked by reconciles, as slow start is:
   it is made once the reconciles since the decrease reach the limit before it plus the limit
   after it (every reconcile that was in flight at the decrease, and one per worker at the new
   limit; :meth:`GradientAimd.ready_to_rebase`), and at the latest after ``cooldown`` windows
   with what they measured. The cooldown still holds the next increase.
2. **Decrease** (multiplicative, ``limit * decrease_factor``, at least one worker) when the
   API server's share of request latency (client throttling excluded) is ``latency_floor``
   seconds above its base and either implies more than ``queued_to_shrink`` requests queued or
   is ``latency_ratio_to_shrink`` times the base (a slowdown that few workers cannot show as
   queueing), or the client token-bucket wait per request reached ``throttle_shrink``, or
   reconcile errors reached ``error_shrink`` of reconciles *and rose* against the share seen at
   the lower limits (doubled and ``error_rise`` points more): errors at a fixed share whatever
   the limit (users' conflicting edits) are not the workers' doing (how errors are counted and
   judged: below). At most once per
   ``cooldown`` windows, so one slow spell does not drop the limit to the floor before the
   first decrease has taken effect.
3. **Idle decrease** (one worker) when the workers were all busy less than ``idle_busy`` of the
   time and nothing waited, for ``idle_after`` windows in a row.
4. **Increase** (one worker; twice the workers during slow start, as TCP's slow start does,
   until the first decrease) when all workers were busy at least ``busy_to_grow`` of the time,
   items waited in the queue (and the mean wait reached ``queue_wait_to_grow`` or grew), API
   latency was within half ``latency_floor`` of its base or both implied fewer than
   ``queued_to_grow`` requests queued and stayed under ``latency_ratio_to_grow`` times the base
   (the dead band below the ratio that sheds), throttling below
   ``throttle_hold`` and errors below ``error_hold`` or no higher than at the lower limits
   (``error_rise`` points; at the floor errors never hold the limit: one worker cannot race
   itself), for ``grow_after`` windows in a row (``slow_start_grow_after`` during slow start).
   The latency of the window's latest look (its last fraction of a second, when the driver
   looked into it) must be flat too: a window's mean can still be calm when the API server has
   just slowed, and a doubling on evidence that predates the rise would be cut back at once.
   In slow start, more items queued than workers also counts as waiting, and a window may be
   closed before its time once every worker finished a reconcile at the current limit and the
   increase's conditions hold (:meth:`GradientAimd.ready_to_double`): the doubling is clocked by
   the reconciles, as TCP's by the round trips, not by the window's timer.

Errors are judged on counts, not on one window's share: a window of a few dozen reconciles in
which one failed shows 3%, and one such failure at two workers must not hold the limit there.
The errors and reconciles of the windows run at each limit are pooled (older windows weigh
``error_decay`` less per window at that limit), and a rise is a difference of two proportions,
the pooled share at the current limit against the pooled share at all lower limits, that is
both large enough (``error_rise`` points; doubled too, to shed) and unlikely to be chance: the
lower one-sided confidence bound of the difference (Agresti and Caffo, "Simple and Effective
Confidence Intervals for Proportions and Differences of Proportions Result from Adding Two
Successes and Two Failures", The American Statistician, 2000; ``error_confidence`` standard
errors) is above zero. With no lower limit measured, the level alone decides, by the Wilson
score bound of the share (Wilson, JASA 1927). Until the counts decide, errors neither hold nor
shed: a rise too small to be told from chance in the reconciles seen is not acted on.

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

from rayop.runtime.concurrency import rules


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
    latest_latency_mean: float | None = None
    """Mean API latency (throttling excluded) over the window's latest look, the last fraction
    of a second of it (None: the window was not looked into, or no request ended then)."""

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
    slow_start_grow_after: int = 1
    """Windows in a row that double the limit during slow start."""
    queued_to_grow: float = 3.0
    """Vegas' alpha: grow only while latency implies fewer requests queued than this."""
    queued_to_shrink: float = 6.0
    """Vegas' beta: shrink when latency implies more requests queued than this."""
    latency_floor: float = rules.LATENCY_RISE_FLOOR
    latency_ratio_to_grow: float = rules.LATENCY_RATIO_QUEUED
    """Grow only while the recent latency is below this many times the base (or within half
    ``latency_floor`` of it)."""
    latency_ratio_to_shrink: float = 3.0
    """Shrink when the recent latency is this many times the base, whatever it implies queued."""
    rebase_share: float = 0.8
    """After a decrease on latency, a mean latency over the windows since (see ``Rebase``) still at
    this share of the latency at the decrease means the rise was not this controller's: the base
    moves to it (a quarter fewer workers queueing at the API server would have cut it by a
    quarter or more; the window that saw a slowdown begin often carries a spike above the
    slowed latency, so 0.9 missed rebases that 0.8 catches)."""
    throttle_hold: float = rules.THROTTLE_WAIT_LIMIT
    throttle_shrink: float = 0.25
    error_hold: float = 0.02
    error_shrink: float = 0.1
    error_rise: float = 0.01
    """Errors "rose" when their share is twice and this many points above the lower limits'."""
    error_decay: float = 0.8
    """Weight left, per window at a limit, to that limit's earlier error counts."""
    error_confidence: float = 1.645
    """Standard errors (one-sided 95%) by which a rise of errors must clear zero (or a level
    clear its threshold) before it holds or sheds the limit."""
    decrease_factor: float = 0.75
    idle_busy: float = 0.25
    idle_after: int = 10
    cooldown: int = 3
    slow_start: bool = True
    """Double the limit on each increase until the first decrease (TCP's slow start)."""
    probe_after: int = 30
    probe_max: int = 480
    base_alpha: float = 0.05
    """How fast the base latency follows a higher latency while it implies little queueing and
    is below half ``latency_ratio_to_shrink`` times the base (it follows a lower one at once)."""
    recent_alpha: float = 0.5
    """Smoothing of the recent latency (an exponential moving average); none in slow start,
    whose doubling must see at once what the last doubling did."""

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
    note: str | None = None
    """A change of the law's state worth a log line that did not move the limit (a rebase)."""

    @property
    def changed(self) -> bool:
        """Whether the limit moved."""
        return self.limit != self.previous


@dataclass(frozen=True, slots=True)
class ErrorCounts:
    """Pooled (decayed) reconcile errors and reconciles at the current limit and below it."""

    errors: float
    reconciles: float
    lower_errors: float
    lower_reconciles: float

    @property
    def share(self) -> float:
        """Errors per reconcile at the current limit (0 when none ran)."""
        return self.errors / self.reconciles if self.reconciles else 0.0

    @property
    def lower_share(self) -> float | None:
        """Errors per reconcile at the lower limits (None: none measured)."""
        return self.lower_errors / self.lower_reconciles if self.lower_reconciles else None

    def rise_bound(self, z: float) -> float:
        """Returns the lower one-sided bound, ``z`` standard errors, of the current share minus
        the lower limits' (Agresti and Caffo: one error and one success added to each)."""
        n1, n0 = self.reconciles + 2, self.lower_reconciles + 2
        p1, p0 = (self.errors + 1) / n1, (self.lower_errors + 1) / n0
        return p1 - p0 - z * math.sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0)

    def share_bound(self, z: float) -> float:
        """Returns the Wilson score lower bound, ``z`` standard errors, of the current share."""
        n = self.reconciles
        if n <= 0:
            return 0.0
        p, z2 = self.share, z * z
        centre = p + z2 / (2 * n)
        spread = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        return (centre - spread) / (1 + z2 / n)


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
        self._latency_at_decrease: float | None = None
        """The window's API latency at the last decrease on latency (None: none to judge)."""
        self._after_decrease: list[float] = []
        self._reconciles_since_decrease = 0
        self._limit_before_decrease = self.limit
        self._errors_at: dict[int, tuple[float, float]] = {}
        """Per limit: decayed (errors, reconciles) of the windows run at it."""

    @property
    def slow_start(self) -> bool:
        """Whether the law is still in slow start (doubling until the first decrease)."""
        return self._slow_start

    def update(self, w: Window) -> Decision:
        """Folds one window into the state and returns the limit to run with next."""
        self._track_latency(w.api_latency_mean)
        self._since_decrease += 1
        self._since_congested += 1
        if self._congested_at is not None and self._since_congested >= self._probe_wait:
            self._congested_at = None
        before = self.limit
        note = self._rebase(w)
        errors = self.error_counts(w)
        reason = self._decrease(w, errors) or self._idle(w) or self._grow(w, errors)
        self._track_errors(w, before)
        self._last_wait = w.queue_wait_mean
        return Decision(self.limit, before, reason if self.limit != before else None, note)

    @property
    def rebase_pending(self) -> bool:
        """Whether a decrease on latency awaits the judgement of whether it brought the latency
        down (see :meth:`ready_to_rebase`)."""
        return self._latency_at_decrease is not None

    def _rebase_evidence(self, reconciles: int) -> bool:
        """Whether ``reconciles`` since the decrease cover every reconcile in flight at it (at
        most the limit before) and one per worker at the new limit."""
        return reconciles >= self._limit_before_decrease + self.limit

    def _rebase_to(
        self, latencies: list[float], reconciles: int, since_decrease: int
    ) -> float | None:
        """Returns the latency to rebase to, or None: pure."""
        s, at = self.settings, self._latency_at_decrease
        if at is None or not latencies:
            return None
        if since_decrease < s.cooldown and not self._rebase_evidence(reconciles):
            return None
        since = sum(latencies) / len(latencies)
        old = self.base_latency
        if since < s.rebase_share * at:
            return None  # fewer workers brought the latency down: it was this controller's
        if old is not None and (
            since - old < s.latency_floor or since < s.latency_ratio_to_grow * old
        ):
            return None  # the latency is (back) near its base: nothing to move
        return since

    def ready_to_rebase(self, w: Window) -> bool:
        """Whether a window may close now, before its time, because it would rebase: the
        reconciles since the last decrease on latency (``w`` included) are enough to judge it,
        and the latency since stayed (see ``Rebase`` above). Pure: the state does not change."""
        if self._latency_at_decrease is None or w.api_latency_mean is None:
            return False
        reconciles = self._reconciles_since_decrease + w.reconciles
        if not self._rebase_evidence(reconciles):
            return False
        latencies = [*self._after_decrease, w.api_latency_mean]
        return self._rebase_to(latencies, reconciles, self._since_decrease + 1) is not None

    def _rebase(self, w: Window) -> str | None:
        s, at = self.settings, self._latency_at_decrease
        if at is None:
            return None
        if w.api_latency_mean is not None:
            self._after_decrease.append(w.api_latency_mean)
        self._reconciles_since_decrease += w.reconciles
        reconciles = self._reconciles_since_decrease
        if self._since_decrease < s.cooldown and not self._rebase_evidence(reconciles):
            return None
        if not self._after_decrease:
            if self._since_decrease >= s.cooldown:
                self._latency_at_decrease = None
            return None
        since = self._rebase_to(self._after_decrease, reconciles, s.cooldown)
        self._latency_at_decrease = None  # judged: once per decrease
        old = self.base_latency
        if since is None:
            return None
        self.base_latency = self.recent_latency = since
        self._congested_at = None
        self._probe_wait = s.probe_after
        self._slow_start = s.slow_start
        return (
            f"API latency stayed at {_ms(since)} (it was {_ms(at)} at the decrease) with "
            f"{self.limit} workers: the rise is not this controller's load, the base latency "
            f"moves from {_ms(old)} to {_ms(since)}"
            + (" and slow start resumes" if s.slow_start else "")
        )

    def _track_errors(self, w: Window, limit: int) -> None:
        if not w.reconciles:
            return
        self._errors_at[limit] = self._pooled_at(limit, w)

    def _pooled_at(self, limit: int, w: Window) -> tuple[float, float]:
        errors, reconciles = self._errors_at.get(limit, (0.0, 0.0))
        d = self.settings.error_decay
        return errors * d + w.errors, reconciles * d + w.reconciles

    def error_counts(self, w: Window) -> ErrorCounts:
        """Returns the pooled errors and reconciles at the current limit (``w`` included) and at
        the lower limits. Pure: the state does not change."""
        if w.reconciles:
            errors, reconciles = self._pooled_at(self.limit, w)
        else:
            errors, reconciles = self._errors_at.get(self.limit, (0.0, 0.0))
        return ErrorCounts(errors, reconciles, *self._lower_counts())

    def _lower_counts(self) -> tuple[float, float]:
        lower = [(e, n) for lim, (e, n) in self._errors_at.items() if lim < self.limit]
        return sum(e for e, _ in lower), sum(n for _, n in lower)

    def _errors_rose(self, c: ErrorCounts, *, doubled: bool) -> bool:
        """Whether the errors at this limit rose against the lower limits' (counts decide)."""
        s = self.settings
        lower = c.lower_share
        if lower is None:
            return False
        if c.share - lower < s.error_rise or (doubled and c.share < 2 * lower + s.error_rise):
            return False
        return c.rise_bound(s.error_confidence) > 0

    def _errors_reached(self, c: ErrorCounts, level: float) -> bool:
        """Whether the errors at this limit reached ``level`` and rose with the limit (or, with
        no lower limit measured, whether the counts show the level itself)."""
        if c.share < level:
            return False
        if c.lower_share is None:
            return c.share_bound(self.settings.error_confidence) >= level
        return self._errors_rose(c, doubled=level >= self.settings.error_shrink)

    def _track_latency(self, latency: float | None) -> None:
        if latency is None:
            return
        s = self.settings
        recent = self.recent_latency
        alpha = 1.0 if self._slow_start else s.recent_alpha  # slow start judges each window
        self.recent_latency = latency if recent is None else recent + alpha * (latency - recent)
        base = self.base_latency
        if base is None or self.recent_latency < base:
            self.base_latency = self.recent_latency
        elif (  # noise, not queueing nor a slowdown: let the base follow
            self.queued() < s.queued_to_grow
            and self.recent_latency < s.latency_ratio_to_shrink / 2 * base
        ):
            self.base_latency = base + s.base_alpha * (self.recent_latency - base)

    def _latency_rose(self) -> bool:
        base, recent, s = self.base_latency, self.recent_latency, self.settings
        if base is None or recent is None or recent - base < s.latency_floor:
            return False
        return self.queued() > s.queued_to_shrink or recent >= s.latency_ratio_to_shrink * base

    def _latency_flat(self) -> bool:
        return self._flat(self.base_latency, self.recent_latency)

    def _flat(self, base: float | None, recent: float | None) -> bool:
        s = self.settings
        if base is None or recent is None:
            return True
        if recent - base < s.latency_floor / 2:
            return True
        queued = self._queued_at(base, recent)
        return queued < s.queued_to_grow and recent < s.latency_ratio_to_grow * base

    def ready_to_double(self, w: Window) -> bool:
        """Whether a slow-start window may close now, before its time, because it would double.

        TCP's slow start is clocked by acknowledgements, not by a timer: the window doubles
        once per round trip. A controller's round trip is one reconcile, far shorter than a
        window. So while in slow start, a window so far in which every worker finished at least
        one reconcile (``reconciles >= limit``: the limit has been measured), all were busy, the
        queue backed up and latency, throttling and errors were calm as :meth:`update`'s
        increase wants them may be decided at once. Pure: the state does not change.
        """
        s = self.settings
        if not self._slow_start or self.limit >= s.ceiling or self._since_decrease < s.cooldown:
            return False
        if w.reconciles < self.limit:
            return False
        base, recent = self.base_latency, w.api_latency_mean  # slow start judges each window
        if recent is not None and (base is None or recent < base):
            base = recent
        latest = self._flat(base, w.latest_latency_mean)
        return self._grow_conditions(w, self.error_counts(w), self._flat(base, recent) and latest)

    def queued(self) -> float:
        """Requests the latency implies are queued at the API server: ``limit * (1 - base/recent)``."""
        return self._queued_at(self.base_latency, self.recent_latency)

    def _queued_at(self, base: float | None, recent: float | None) -> float:
        if base is None or recent is None or recent <= base:
            return 0.0
        return self.limit * (1 - base / recent)

    def _congestion(self, w: Window, errors: ErrorCounts) -> tuple[str, bool] | None:
        """Returns why the limit should fall and whether latency is the cause, or None."""
        s = self.settings
        if self._latency_rose():
            base, recent = self.base_latency or 0.0, self.recent_latency or 0.0
            return (
                f"API latency rose to {_ms(recent)} from a base of {_ms(base)} (throttling "
                f"excluded, {recent / base if base else math.inf:.1f}x), about "
                f"{self.queued():.1f} requests queued at the API server"
            ), True
        if w.throttle_wait_mean is not None and w.throttle_wait_mean >= s.throttle_shrink:
            return f"client throttling wait reached {_ms(w.throttle_wait_mean)} per request", False
        if self._errors_reached(errors, s.error_shrink):
            lower = errors.lower_share
            against = "" if lower is None else f", against {lower:.0%} at fewer workers"
            return (
                f"reconcile errors reached {errors.share:.0%} of reconciles "
                f"({errors.errors:.0f} of {errors.reconciles:.0f}{against})"
            ), False
        return None

    def _decrease(self, w: Window, errors: ErrorCounts) -> str | None:
        s = self.settings
        congestion = self._congestion(w, errors)
        if congestion is None:
            return None
        cause, on_latency = congestion
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
        self._latency_at_decrease = w.api_latency_mean if on_latency else None
        self._after_decrease = []
        self._reconciles_since_decrease = 0
        self._limit_before_decrease = old
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

    def _errors_calm(self, errors: ErrorCounts) -> bool:
        return self.limit <= self.settings.floor or not self._errors_reached(
            errors, self.settings.error_hold
        )

    def _grow_conditions(self, w: Window, errors: ErrorCounts, latency_flat: bool) -> bool:
        """Every worker busy, the queue backing up, all else calm, the next limit not blocked."""
        s = self.settings
        wait = w.queue_wait_mean or 0.0
        waits = w.queue_depth > 0 and (
            wait >= s.queue_wait_to_grow
            or (self._last_wait is not None and wait > self._last_wait)
            or (self._slow_start and w.queue_depth >= self.limit)  # more waiting than workers
        )
        calm = (
            latency_flat
            and (w.throttle_wait_mean or 0.0) < s.throttle_hold
            and self._errors_calm(errors)
        )
        probing_blocked = self._congested_at is not None and self.limit + 1 >= self._congested_at
        return w.busy_fraction >= s.busy_to_grow and waits and calm and not probing_blocked

    def _grow(self, w: Window, errors: ErrorCounts) -> str | None:
        s = self.settings
        wait = w.queue_wait_mean or 0.0
        latest = self._flat(self.base_latency, w.latest_latency_mean)
        if not self._grow_conditions(w, errors, self._latency_flat() and latest):
            self._grow_streak = 0
            return None
        self._grow_streak += 1
        if (
            self._grow_streak < (s.slow_start_grow_after if self._slow_start else s.grow_after)
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
            f"{errors.share:.0%}: {old} -> {self.limit} workers"
            + (" (slow start: doubling until the first congestion)" if self._slow_start else "")
        )
