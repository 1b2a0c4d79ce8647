"""Turns per-concurrency measurements into advice on ``--reconcile-concurrency``, with reasons.

The rule (issue 7): raise concurrency when the workers are saturated (all busy most of the time)
and the queue backs up (items wait long before a worker takes them), while API latency, client
throttling waits and reconcile errors stay flat. If API latency or throttling is already rising,
more workers only add contention. If the workers are rarely all busy, concurrency is not the
bottleneck. A raise must also pay off: the next value has to shorten the time until every
cluster is ready or the queue wait.

:func:`recommend` walks the measured values from the lowest up and stops at the first step the
rule does not justify. It is a pure function of the results.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from rayop.bench.results import ConcurrencyResult

BUSY_SATURATED = 0.8
"""Workers count as saturated when all were busy in at least this fraction of samples."""
QUEUE_BACKLOG_SECONDS = 1.0
"""The queue counts as backed up when its wait p99 (or mean) reaches this. The p99 comes from
workqueue buckets that grow tenfold (0.1, 1, 10, 100 s), so it is coarse; the mean is exact."""
LATENCY_RISE_RATIO = 1.5
"""API latency "rises" when the mean grows by this factor ..."""
LATENCY_RISE_FLOOR = 0.02
"""... and by at least this many seconds (so noise on millisecond latencies is ignored)."""
THROTTLE_RISE_RATIO = 1.5
THROTTLE_RISE_FLOOR = 0.05
"""Throttling "rises" when the mean token-bucket wait grows by 1.5x and 50 ms."""
ERRORS_RISE_RATIO = 2.0
ERRORS_RISE_FLOOR = 0.05
"""Reconcile errors "rise" when their share of reconciles doubles and grows by 5 points (a few
routine 409s on status writes, KubeRay #745, do not veto a raise)."""
IMPROVEMENT = 0.9
"""A raise pays off when time to all-ready or queue wait falls below 90 % of before."""


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The advice and why."""

    concurrency: int
    """The value to run with."""
    action: str
    """"raise", "keep" or "raise-further" (the highest value tested still saturates)."""
    reasons: tuple[str, ...]
    """One sentence per step examined, citing the numbers."""

    @property
    def headline(self) -> str:
        """The advice in one sentence."""
        return {
            "raise": f"Raise --reconcile-concurrency to {self.concurrency}.",
            "keep": f"Keep --reconcile-concurrency at {self.concurrency}.",
            "raise-further": f"Use at least {self.concurrency}; higher values may help further.",
        }[self.action]

    @property
    def text(self) -> str:
        """The advice and its reasons as one paragraph."""
        return " ".join([self.headline, *(r[0].upper() + r[1:] + "." for r in self.reasons)])


def fmt_seconds(value: float | None) -> str:
    """Formats seconds for a sentence ("12 s", "0.35 s", "4 ms", "n/a")."""
    if value is None:
        return "n/a"
    if value >= 10:
        return f"{value:.0f} s"
    if value >= 0.1:
        return f"{value:.2f} s"
    return f"{value * 1000:.0f} ms"


def _queue_wait(r: ConcurrencyResult) -> float:
    return max(r.queue_wait_p99 or 0.0, r.queue_wait_mean or 0.0)


def saturated(r: ConcurrencyResult) -> bool:
    """Tells whether workers were all busy most of the time while the queue backed up."""
    return r.busy_fraction >= BUSY_SATURATED and _queue_wait(r) >= QUEUE_BACKLOG_SECONDS


def _rose(before: float | None, after: float | None, ratio: float, floor: float) -> bool:
    b, a = before or 0.0, after or 0.0
    return a - b >= floor and a >= b * ratio


def api_latency(r: ConcurrencyResult) -> float | None:
    """The mean API latency without client throttling (with it when that is unknown)."""
    return (
        r.api_server_latency_mean if r.api_server_latency_mean is not None else r.api_latency_mean
    )


def error_share(r: ConcurrencyResult) -> float:
    """Reconcile errors per reconcile (0 when nothing was reconciled)."""
    return r.reconcile_errors / r.reconciles if r.reconciles else 0.0


def contention(cur: ConcurrencyResult, nxt: ConcurrencyResult) -> list[str]:
    """Returns, in words, what got worse from ``cur`` to ``nxt`` (empty: nothing did)."""
    found = []
    if _rose(api_latency(cur), api_latency(nxt), LATENCY_RISE_RATIO, LATENCY_RISE_FLOOR):
        found.append(
            f"API latency rose from {fmt_seconds(api_latency(cur))} to "
            f"{fmt_seconds(api_latency(nxt))} (mean)"
        )
    if _rose(
        cur.throttle_wait_mean, nxt.throttle_wait_mean, THROTTLE_RISE_RATIO, THROTTLE_RISE_FLOOR
    ):
        found.append(
            f"client throttling wait rose from {fmt_seconds(cur.throttle_wait_mean)} to "
            f"{fmt_seconds(nxt.throttle_wait_mean)} per request"
        )
    if _rose(error_share(cur), error_share(nxt), ERRORS_RISE_RATIO, ERRORS_RISE_FLOOR):
        found.append(
            f"reconcile errors rose from {error_share(cur):.0%} to {error_share(nxt):.0%} of "
            f"reconciles ({cur.reconcile_errors_per_minute:.0f}/min -> "
            f"{nxt.reconcile_errors_per_minute:.0f}/min)"
        )
    return found


def _mean_wait(r: ConcurrencyResult) -> float:
    return r.queue_wait_mean if r.queue_wait_mean is not None else (r.queue_wait_p99 or 0.0)


def _improved(cur: ConcurrencyResult, nxt: ConcurrencyResult) -> bool:
    faster = nxt.seconds_until_all_ready < cur.seconds_until_all_ready * IMPROVEMENT
    shorter_wait = _mean_wait(nxt) < _mean_wait(cur) * IMPROVEMENT
    return not nxt.timed_out and (faster or shorter_wait)


def _throttling(cur: ConcurrencyResult, nxt: ConcurrencyResult) -> str:
    if cur.throttle_wait_mean is None and nxt.throttle_wait_mean is None:
        return ""  # no client-side limiter (qps < 0)
    return (
        f"throttling wait {fmt_seconds(cur.throttle_wait_mean)} -> "
        f"{fmt_seconds(nxt.throttle_wait_mean)} per request, "
    )


def _state(r: ConcurrencyResult) -> str:
    return (
        f"at {r.concurrency}: workers busy {r.busy_fraction:.0%} of the time, "
        f"queue wait p99 {fmt_seconds(r.queue_wait_p99)} (mean {fmt_seconds(r.queue_wait_mean)})"
    )


def recommend(results: Sequence[ConcurrencyResult]) -> Recommendation:
    """Returns the advice the measurements justify, with the reasons in words.

    Raises:
        ValueError: ``results`` is empty.
    """
    if not results:
        raise ValueError("no results to recommend from")
    ordered = sorted(results, key=lambda r: r.concurrency)
    chosen = ordered[0]
    reasons: list[str] = []
    for cur, nxt in itertools.pairwise(ordered):
        if not saturated(cur):
            reasons.append(f"{_state(cur)}: concurrency is not the bottleneck")
            return _done(ordered[0], chosen, reasons)
        worse = contention(cur, nxt)
        if worse:
            reasons.append(
                f"{_state(cur)}, but at {nxt.concurrency} {' and '.join(worse)} (all ready in "
                f"{fmt_seconds(cur.seconds_until_all_ready)} -> "
                f"{fmt_seconds(nxt.seconds_until_all_ready)}): more workers "
                f"add contention; do not raise beyond {cur.concurrency} (look at qps/burst or "
                "API server capacity instead)"
            )
            return _done(ordered[0], chosen, reasons)
        if not _improved(cur, nxt):
            reasons.append(
                f"{_state(cur)}, but raising to {nxt.concurrency} did not shorten the time "
                f"until all clusters are ready ({fmt_seconds(cur.seconds_until_all_ready)} -> "
                f"{fmt_seconds(nxt.seconds_until_all_ready)}) nor the queue wait: stay at "
                f"{cur.concurrency}"
            )
            return _done(ordered[0], chosen, reasons)
        reasons.append(
            f"{_state(cur)}, API latency flat ({fmt_seconds(api_latency(cur))} -> "
            f"{fmt_seconds(api_latency(nxt))} mean), {_throttling(cur, nxt)}all ready in "
            f"{fmt_seconds(cur.seconds_until_all_ready)} -> "
            f"{fmt_seconds(nxt.seconds_until_all_ready)}: raise to {nxt.concurrency}"
        )
        chosen = nxt
    if saturated(chosen):
        reasons.append(
            f"{_state(chosen)}: still saturated at the highest value tested; measure higher values"
        )
        return Recommendation(chosen.concurrency, "raise-further", tuple(reasons))
    verdict = "concurrency is not the bottleneck" if len(ordered) == 1 else "no longer saturated"
    reasons.append(f"{_state(chosen)}: {verdict}")
    return _done(ordered[0], chosen, reasons)


def _done(
    first: ConcurrencyResult, chosen: ConcurrencyResult, reasons: list[str]
) -> Recommendation:
    action = "raise" if chosen.concurrency > first.concurrency else "keep"
    return Recommendation(chosen.concurrency, action, tuple(reasons))
