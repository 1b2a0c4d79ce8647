"""Before and after a change: did it help? A keep-or-revert verdict over two windows.

As a controlled experiment, in this order:

1. **The load must be the same.** The offered load (:mod:`rayop.advise.offered_load`: what
   the users asked for, not what the operator did) must agree within the tolerance, the larger
   of 10 % and the noise but at most 25 % (the noise is measured on queue wait, which can swing
   90 % between two halves of a window; uncapped it let a doubled load pass as the same: 3,549 ->
   6,999 creates a minute); otherwise "the load changed, the comparison does not hold". Two
   windows that each hold a whole burst compare its API creates counted whole: their lengths are
   the operator's time to serve it (a rate over them called the same 900 clusters, served
   faster at 2 workers, a changed load). Other windows compare API creates per minute, with two
   exceptions, both measured:

   - Work arriving per minute (``workqueue_adds_total``) is shown, not judged: a queue counts an
     add only when the key is not queued already, so more workers, draining the queue sooner,
     coalesce fewer events and count more adds at the same load (KubeRay v1.7.0 at one cluster a
     second: 415 adds in 59 s with 1 worker, 553 in 58 s with 2, creates 365 and 369 a minute).
   - When the workers were saturated with a backlog before the change, creates measured the
     operator's throughput, not the load: more creates after it, with the backlog growing slower
     than before, are the change's effect (the backlog drained), not a new load. Fewer creates,
     more without that backlog, or more with a backlog growing as fast, still fail.
2. **The noise is measured, not assumed, where it can be:** the relative spread of each
   controller's queue wait p99 between the two halves of each window (the same setting, twice);
   at least 5 %. A window too thin to halve assumes 10 %, and the verdict says which.
3. **Outcomes, worse first:** reconcile errors that rose (doubled and 5 points more), or queue
   wait p99 or time to ready worse by more than the noise mean revert. API latency that rose (1.5x
   and 20 ms) means revert unless queue wait or time to ready improved beyond the noise: then what
   users wait for got better and the verdict is keep, naming the API server as the next limit.
   Where time to ready is measured, a queue wait gain without a time-to-ready gain is no gain:
   the wait moved elsewhere (rayop at an API server at capacity: queue wait p99 138 s -> 97 s,
   all ready 138 s -> 135 s). Queue wait p99 or time to ready (``kuberay_cluster_provisioned_duration_seconds``
   of the clusters provisioned in each window, where exported) better by more than the noise
   means keep. Within the noise: keep a change that lowered the workers (as good with fewer),
   revert one that raised them (no gain to show for them). A queue wait change counts only where
   one side reached a backlog (1 s): below it nothing backed up and the difference is noise.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rayop.advise.errors import AdviseInputError
from rayop.advise.evidence import (
    ControllerEvidence,
    Scrape,
    client_evidence,
    controller_evidence,
    counter_reset,
)
from rayop.advise.exposition import Snapshot
from rayop.advise.format import fmt_seconds
from rayop.advise.offered_load import OfferedLoad, offered_load
from rayop.runtime.concurrency import rules

NOISE_ASSUMED = 0.10
"""The noise assumed when a window is too thin to halve (10 %)."""
NOISE_FLOOR = 0.05
"""A measured noise below this is taken as this (two halves can agree by chance)."""
LOAD_TOLERANCE = 0.10
"""The load may differ by this much (or by the noise, if larger) and still be the same load."""
LOAD_TOLERANCE_CAP = 0.25
"""The most the noise may widen the load tolerance to."""
PROVISIONED = "kuberay_cluster_provisioned_duration_seconds"
MIN_HALF = 3
"""Scrapes a half-window needs for its spread to count as noise."""


@dataclass(frozen=True, slots=True)
class WindowSummary:
    """What one window measured, for comparison."""

    seconds: float
    workers: dict[str, int]
    arrivals_per_minute: float
    load: OfferedLoad
    controllers: dict[str, ControllerEvidence]
    api_latency: float | None
    ready_p50: float | None
    ready_count: int


def _provisioned(window: Sequence[Scrape]) -> list[float]:
    """Times to provisioned of the clusters that reached it during the window."""
    first: Snapshot = window[0].snapshot
    seen = {labels for name, labels in first.samples if name == PROVISIONED}
    last = window[-1].snapshot
    return [
        value
        for (name, labels), value in last.samples.items()
        if name == PROVISIONED and labels not in seen
    ]


def summarize(window: Sequence[Scrape], controllers: Sequence[str]) -> WindowSummary:
    """Reads the comparison's figures out of ``window``."""
    seconds = window[-1].t - window[0].t
    minutes = seconds / 60 if seconds > 0 else float("inf")
    evidence = {c: controller_evidence(c, window) for c in controllers}
    ready = _provisioned(window)
    return WindowSummary(
        seconds=seconds,
        workers={c: e.workers for c, e in evidence.items()},
        arrivals_per_minute=sum(e.adds for e in evidence.values()) / minutes,
        load=offered_load(window, controllers),
        controllers=evidence,
        api_latency=client_evidence(window).latency_mean,
        ready_p50=statistics.median(ready) if ready else None,
        ready_count=len(ready),
    )


def _spread(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or max(a, b) <= 0:
        return None
    return abs(a - b) / max(a, b)


def noise(windows: Sequence[Sequence[Scrape]], controllers: Sequence[str]) -> tuple[float, bool]:
    """Returns the noise and whether it was measured (else assumed).

    The noise is the largest relative spread of a controller's queue wait p99 between the halves
    of one window, over both windows and every controller that ran passes in both halves.
    """
    spreads = []
    for window in windows:
        half = len(window) // 2
        if half < MIN_HALF:
            return NOISE_ASSUMED, False
        for c in controllers:
            a = controller_evidence(c, window[: half + 1])
            b = controller_evidence(c, window[half:])
            if a.passes and b.passes and (s := _spread(a.wait_p99, b.wait_p99)) is not None:
                spreads.append(s)
    if not spreads:
        return NOISE_ASSUMED, False
    return max(NOISE_FLOOR, max(spreads)), True


@dataclass(frozen=True, slots=True)
class Comparison:
    """The verdict on a change, and the figures it rests on."""

    verdict: str
    """"keep", "revert", or "incomparable" (the load changed, or a window cannot be read)."""
    reasons: tuple[str, ...]
    noise: float
    noise_measured: bool
    before: WindowSummary | None = None
    after: WindowSummary | None = None

    def to_json(self) -> dict[str, object]:
        """Returns the comparison as a JSON-ready mapping."""
        return {
            "verdict": self.verdict,
            "noise": round(self.noise, 3),
            "noise_measured": self.noise_measured,
            "reasons": list(self.reasons),
        }


def _change(before: float | None, after: float | None) -> str:
    text = f"{fmt_seconds(before)} -> {fmt_seconds(after)}"
    if before and after is not None:
        text += f" ({(after - before) / before:+.0%})"
    return text


def _gain(before: float | None, after: float | None) -> float | None:
    """Relative improvement (positive: after is lower), None when either is missing."""
    if not before or after is None:
        return None
    return 1 - after / before


def _behind(b: WindowSummary) -> bool:
    """Whether any controller was saturated with a backlog in the window (its output then is
    its throughput, not the load)."""
    return any(
        rules.saturated(e.busy, e.wait_p99, queue_growing=e.queue_growing)
        for e in b.controllers.values()
    )


def _backlog_slope(w: WindowSummary) -> float:
    """How fast the queues grew over the window, items per minute (summed)."""
    return sum(e.depth_slope for e in w.controllers.values())


def _load_check(b: WindowSummary, a: WindowSummary, tolerance: float) -> tuple[list[str], str]:
    """Returns why the load differs (empty: the same) and a note on how it was judged."""
    if b.load.whole_burst and a.load.whole_burst:
        x, y = b.load.creates, a.load.creates
        spread = _spread(x, y)
        if spread is None or spread <= tolerance:
            return [], ""
        return [
            f"API creates {x:.0f} in all before, {y:.0f} after, each window a whole burst served "
            f"({spread:.0%} apart, more than the {tolerance:.0%} tolerance)"
        ], ""
    x, y = b.load.per_minute, a.load.per_minute
    spread = _spread(x, y)
    if spread is None or spread <= tolerance:
        return [], ""
    if y > x and _behind(b) and _backlog_slope(a) < _backlog_slope(b):
        return [], (
            f"API creates {x:.1f}/min -> {y:.1f}/min: the workers were saturated with a backlog "
            "before and it grew slower after, so creates measured their throughput, not the load"
        )
    return [
        f"API creates {x:.1f}/min before, {y:.1f}/min after ({spread:.0%} apart, more than the "
        f"{tolerance:.0%} tolerance)"
    ], ""


def compare(
    before: Sequence[Scrape], after: Sequence[Scrape], controllers: Sequence[str]
) -> Comparison:
    """Compares the window ``after`` a change with the window ``before`` it.

    Raises:
        AdviseInputError: a window has fewer than two scrapes.
    """
    if len(before) < 2 or len(after) < 2:
        raise AdviseInputError("a before/after comparison needs two scrapes in each window")
    level, measured = noise((before, after), controllers)
    for name, window in (("before", before), ("after", after)):
        if (reset := counter_reset(window)) is not None:
            why = f"{reset} fell during the {name} window: the operator restarted, measure again"
            return Comparison("incomparable", (why,), level, measured)
    b, a = summarize(before, controllers), summarize(after, controllers)
    if b.load.whole_burst and a.load.whole_burst:
        # The halves of a burst are its arrival and its drain: their spread is not noise (the
        # saturated scenario's queue wait p99 spread 90 % between them).
        level, measured = NOISE_ASSUMED, False
    tolerance = min(max(LOAD_TOLERANCE, level), LOAD_TOLERANCE_CAP)
    changed, note = _load_check(b, a, tolerance)
    if changed:
        reasons = (*changed, "the load changed, the comparison does not hold")
        return Comparison("incomparable", reasons, level, measured, b, a)
    judged = _judge(b, a, level, measured)
    if note:
        judged = dataclasses.replace(judged, reasons=(judged.reasons[0], note, *judged.reasons[1:]))
    return judged


def _time_to_ready(
    b: WindowSummary, a: WindowSummary
) -> tuple[float | None, float | None, str, str]:
    """What users waited for, before and after, its reason line and its name.

    ``kuberay_cluster_provisioned_duration_seconds`` where both windows export it; else, where
    both hold a whole burst, the time to serve it (to its last create): when every cluster the
    users asked for had what it needed from the operator.
    """
    if b.ready_p50 is not None and a.ready_p50 is not None:
        text = (
            f"time to ready p50 {_change(b.ready_p50, a.ready_p50)} "
            f"({b.ready_count} and {a.ready_count} clusters)"
        )
        return b.ready_p50, a.ready_p50, text, "time to ready"
    x, y = b.load.served_in, a.load.served_in
    if x is None or y is None:
        return None, None, "", ""
    text = f"time to serve the whole burst (to its last create) {_change(x, y)}"
    return x, y, text, "time to serve the burst"


def _judge(b: WindowSummary, a: WindowSummary, level: float, measured: bool) -> Comparison:
    burst = b.load.whole_burst and a.load.whole_burst
    kind = "measured" if measured else "assumed"
    if burst and not measured:
        kind = "assumed: a burst's two halves are its arrival and its drain, not one setting twice"
    load = (
        f"{b.load.creates:.0f} -> {a.load.creates:.0f} API creates in all, each window a whole "
        f"burst served ({b.load.per_minute:.1f} -> {a.load.per_minute:.1f}/min: the pace)"
        if burst
        else f"{b.load.per_minute:.1f} -> {a.load.per_minute:.1f} API creates/min"
    )
    reasons = [
        f"workers {b.workers} -> {a.workers}; the same load ({load}; "
        f"{b.arrivals_per_minute:.1f} -> {a.arrivals_per_minute:.1f} queue adds/min); "
        f"noise {level:.0%} ({kind})"
    ]
    worse, better = [], []
    for c, eb in b.controllers.items():
        ea = a.controllers[c]
        reasons.append(
            f"{c}: queue wait p99 {_change(eb.wait_p99, ea.wait_p99)}, errors "
            f"{eb.error_share:.0%} -> {ea.error_share:.0%}"
        )
        if rules.errors_rose(eb.error_share, ea.error_share):
            worse.append(f"{c}'s reconcile errors rose")
        gain = (
            _gain(eb.wait_p99, ea.wait_p99)
            if rules.wait_matters(eb.wait_p99, ea.wait_p99)
            else None
        )
        if gain is not None and gain < -level:
            worse.append(f"{c}'s queue wait p99 got worse beyond the noise")
        elif gain is not None and gain > level:
            better.append(f"{c}'s queue wait p99 fell beyond the noise")
    reasons.append(f"API latency {_change(b.api_latency, a.api_latency)}")
    contended = rules.latency_rose(b.api_latency, a.api_latency)
    ready_b, ready_a, ready_text, ready_name = _time_to_ready(b, a)
    ready_gain = _gain(ready_b, ready_a)
    if ready_gain is not None:
        reasons.append(ready_text)
        if ready_gain < -level:
            worse.append(f"{ready_name} got worse beyond the noise")
        elif ready_gain > level:
            better.append(f"{ready_name} fell beyond the noise")
        elif better:  # what users wait for did not move: the queue's wait went elsewhere
            reasons.append(
                f"queue wait fell but {ready_name} did not: the wait moved elsewhere (the API "
                "server), no gain"
            )
            better = []
    if worse:
        return Comparison(
            "revert", (*reasons, "revert: " + "; ".join(worse)), level, measured, b, a
        )
    if better and contended:  # what users wait for improved; the API server is the next limit
        last = (
            "keep: " + "; ".join(better) + " (API latency rose: the API server is the next limit)"
        )
        return Comparison("keep", (*reasons, last), level, measured, b, a)
    if better:
        return Comparison("keep", (*reasons, "keep: " + "; ".join(better)), level, measured, b, a)
    if contended:
        last = "revert: API latency rose: more workers only added contention"
        return Comparison("revert", (*reasons, last), level, measured, b, a)
    fewer = sum(a.workers.values()) < sum(b.workers.values())
    last = (
        "keep: as good with fewer workers"
        if fewer
        else "revert: no gain beyond the noise to show for the change"
    )
    return Comparison("keep" if fewer else "revert", (*reasons, last), level, measured, b, a)
