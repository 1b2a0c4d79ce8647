"""Turns measured runs into advice on ``--reconcile-concurrency``: outcomes first, then symptoms.

The rule (issue 19):

1. **Same work, or no ranking.** If any run lost events (``rayop_events_unsent_total`` with a
   losing reason), the runs did not do the same work and are not ranked.
2. **Outcomes decide.** Walking the fixed values from the lowest, a higher value replaces the
   best so far when it shortens the time until all clusters are ready, or the queue wait p99,
   by more than the run-to-run noise (measured over ``--repeat`` runs, else an assumed margin),
   without making time to ready worse by more than the noise, without raising the reconcile
   error share (doubling and 5 points more) and without timing out.
3. **Symptoms explain and name the next limit.** For the chosen value: client throttling that
   grew (the token bucket: raise ``--qps``/``--burst``), API latency without throttling that
   grew (API server capacity), workers still saturated at the highest value tested (measure
   higher values), or workers no longer saturated (concurrency is no longer the bottleneck).

Every sentence cites the figures it rests on. Adaptive runs (``auto``) are not ranked; their
median time to ready is set against the best fixed value's and the lowest's
(:class:`AdaptiveOutcome`). :func:`recommend` is a pure function.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rayop.advise.format import fmt_seconds
from rayop.bench.advise_check import AdviseCheck, advise_checks
from rayop.bench.outcomes import (
    Outcome,
    lost_events,
    noise,
    outcomes,
)
from rayop.bench.results import ConcurrencyResult
from rayop.bench.symptoms import next_limit
from rayop.runtime.concurrency import rules

__all__ = ["AdaptiveOutcome", "Recommendation", "recommend"]


@dataclass(frozen=True, slots=True)
class AdaptiveOutcome:
    """How ``auto`` fared against the fixed values: median time to ready over its runs."""

    label: str
    runs: int
    ready: float
    best_concurrency: int
    best_ready: float
    lowest_concurrency: int
    lowest_ready: float
    timed_out: bool = False

    @property
    def vs_best(self) -> float:
        """Auto's time to ready over the best fixed value's (1.1 or less: within 10 %)."""
        return self.ready / self.best_ready if self.best_ready > 0 else float("inf")

    @property
    def vs_lowest(self) -> float:
        """Auto's time to ready over the lowest fixed value's (at most 1: never worse)."""
        return self.ready / self.lowest_ready if self.lowest_ready > 0 else float("inf")

    def to_json(self) -> dict[str, object]:
        """Returns the figures and both ratios as a JSON-ready mapping."""
        return {
            "label": self.label,
            "runs": self.runs,
            "seconds_until_all_ready": self.ready,
            "timed_out": self.timed_out,
            "best_fixed": self.best_concurrency,
            "best_fixed_seconds": self.best_ready,
            "lowest_fixed": self.lowest_concurrency,
            "lowest_fixed_seconds": self.lowest_ready,
            "vs_best_fixed": round(self.vs_best, 3),
            "vs_lowest_fixed": round(self.vs_lowest, 3),
        }


def adaptive_outcomes(results: Sequence[ConcurrencyResult]) -> list[AdaptiveOutcome]:
    """Returns, per adaptive setting, its median time to ready against the fixed values'."""
    groups = [o for o in outcomes(results) if not o.timed_out]
    if not groups:
        return []
    best = min(groups, key=lambda o: o.ready)
    lowest = groups[0]
    by_label: dict[str, list[ConcurrencyResult]] = {}
    for r in results:
        if r.adaptive:
            by_label.setdefault(r.label.split(" #")[0], []).append(r)
    return [
        AdaptiveOutcome(
            label=label,
            runs=len(runs),
            ready=statistics.median(r.seconds_until_all_ready for r in runs),
            best_concurrency=best.concurrency,
            best_ready=best.ready,
            lowest_concurrency=lowest.concurrency,
            lowest_ready=lowest.ready,
            timed_out=any(r.timed_out for r in runs),
        )
        for label, runs in by_label.items()
    ]


@dataclass(frozen=True, slots=True)
class Recommendation:
    """The advice, why, and what limits the operator next."""

    concurrency: int
    """The value to run with."""
    action: str
    """"raise", "keep", "raise-further" (the highest value tested still saturates) or
    "unranked" (some runs lost events: no value is recommended)."""
    reasons: tuple[str, ...]
    """One sentence per figure the verdict rests on."""
    next_limit: str | None = None
    """"qps" (the client token bucket), "api-server", "concurrency" (measure higher values),
    or None (concurrency is not the bottleneck)."""
    margin: float = 0.0
    """The improvement a higher value had to beat (the run-to-run noise)."""
    adaptive: tuple[AdaptiveOutcome, ...] = ()
    """How each adaptive setting fared against the fixed values."""
    advise_checks: tuple[AdviseCheck, ...] = ()
    """What ``rayop advise`` said from each run's metrics, beside the outcome measured at the
    value it pointed to."""

    @property
    def headline(self) -> str:
        """The advice in one sentence."""
        return {
            "raise": f"Raise --reconcile-concurrency to {self.concurrency}.",
            "keep": f"Keep --reconcile-concurrency at {self.concurrency}.",
            "raise-further": f"Use at least {self.concurrency}; higher values may help further.",
            "unranked": "No recommendation: the runs did not do the same work.",
        }[self.action]

    @property
    def text(self) -> str:
        """The advice and its reasons as one paragraph."""
        return " ".join([self.headline, *(r[0].upper() + r[1:] + "." for r in self.reasons)])


def _change(before: float | None, after: float | None) -> str:
    text = f"{fmt_seconds(before)} -> {fmt_seconds(after)}"
    if before and after is not None:
        text += f" ({(after - before) / before:+.0%})"
    return text


def _gain(before: float | None, after: float | None) -> float:
    return 1 - after / before if before and after is not None else 0.0


def _compare(best: Outcome, o: Outcome, margin: float) -> tuple[bool, str]:
    figures = (
        f"{o.concurrency} against {best.concurrency}: all ready {_change(best.ready, o.ready)}, "
        f"queue wait p99 {_change(best.wait_p99, o.wait_p99)}, reconcile errors "
        f"{best.errors:.0%} -> {o.errors:.0%}"
    )
    if o.timed_out:
        return (
            False,
            f"{figures}, but at {o.concurrency} a run timed out: stay at {best.concurrency}",
        )
    if rules.errors_rose(best.errors, o.errors):
        return False, f"{figures}: the error share rose, stay at {best.concurrency}"
    ready_gain, wait_gain = _gain(best.ready, o.ready), _gain(best.wait_p99, o.wait_p99)
    if not rules.wait_matters(best.wait_p99, o.wait_p99):
        wait_gain = 0.0  # no backlog on either side: the difference is noise
    if ready_gain < -margin:
        return False, (
            f"{figures}: time to ready got worse by more than the {margin:.0%} noise, stay at "
            f"{best.concurrency}"
        )
    if ready_gain > margin:
        return (
            True,
            f"{figures}: better by more than the {margin:.0%} noise, {o.concurrency} is better",
        )
    if wait_gain > margin and best.ready is None:
        return (
            True,
            f"{figures}: queue wait better by more than the {margin:.0%} noise, "
            f"{o.concurrency} is better",
        )
    if wait_gain > margin:
        return False, (
            f"{figures}: queue wait fell but time to ready did not, beyond the {margin:.0%} "
            f"noise: the wait moved elsewhere (the API server), stay at {best.concurrency}"
        )
    return False, f"{figures}: within the {margin:.0%} noise, stay at {best.concurrency}"


def _unranked(results: Sequence[ConcurrencyResult], lowest: int) -> Recommendation | None:
    lossy = [(r, lost) for r in results if (lost := lost_events(r))]
    if not lossy:
        return None
    reasons = [
        f"at {r.label} (run {r.repeat + 1}) {sum(lost.values())} events were lost ("
        + ", ".join(f"{k} {v}" for k, v in lost.items())
        + ")"
        for r, lost in lossy
    ]
    reasons.append(
        "a comparison is only fair between runs that did the same work, so these runs are not "
        "ranked; rerun with fewer clusters, or measure the event recorder first"
    )
    return Recommendation(lowest, "unranked", tuple(reasons))


def _adaptive(
    results: Sequence[ConcurrencyResult], verdicts: Sequence[AdaptiveOutcome]
) -> list[str]:
    lines = []
    for r in results:
        if not r.adaptive:
            continue
        limits = [s[2] for s in r.samples] or [0.0]
        line = (
            f"{r.label} ran {min(limits):.0f} to {max(limits):.0f} workers and reached all ready "
            f"in {fmt_seconds(r.seconds_until_all_ready)}" + (" (timed out)" if r.timed_out else "")
        )
        v = next((v for v in verdicts if r.label.startswith(v.label)), None)
        if v is not None and v.best_ready > 0:
            line += (
                f", {r.seconds_until_all_ready / v.best_ready:.2f}x the best fixed value "
                f"({v.best_concurrency}, {fmt_seconds(v.best_ready)})"
            )
            if v.lowest_concurrency != v.best_concurrency and v.lowest_ready > 0:
                line += (
                    f" and {r.seconds_until_all_ready / v.lowest_ready:.2f}x the lowest "
                    f"({v.lowest_concurrency}, {fmt_seconds(v.lowest_ready)})"
                )
        lines.append(line + _slowdown(r, results))
    for v in verdicts:
        if v.runs > 1:
            lines.append(
                f"{v.label} over {v.runs} runs: median all ready {fmt_seconds(v.ready)}, "
                f"{v.vs_best:.2f}x the best fixed value ({v.best_concurrency}) and "
                f"{v.vs_lowest:.2f}x the lowest ({v.lowest_concurrency})"
            )
    return lines


def _slowdown(r: ConcurrencyResult, results: Sequence[ConcurrencyResult]) -> str:
    """Says how an adaptive run met the API slowdown: workers shed, errors against the lowest."""
    if r.api_slowdown_at is None:
        return ""
    text = f"; when the API slowed at {fmt_seconds(r.api_slowdown_at)} it ran "
    text += f"{r.workers_at_slowdown or 0:.0f} workers and " + (
        "did not reduce them"
        if r.workers_reduced_after is None
        else f"had fewer {fmt_seconds(r.workers_reduced_after)} later"
    )
    fixed = [f for f in results if not f.adaptive and f.repeat == r.repeat]
    if fixed:
        low = min(fixed, key=lambda f: f.concurrency)
        text += (
            f"; reconcile errors {r.reconcile_errors_per_minute:.1f}/min against "
            f"{low.reconcile_errors_per_minute:.1f}/min at {low.concurrency}"
        )
    return text


def recommend(
    results: Sequence[ConcurrencyResult], *, qps: float | None = None, burst: int | None = None
) -> Recommendation:
    """Returns the advice the measurements justify, with the figures in words.

    Args:
        results: Every run: fixed values (one or more runs each) and adaptive runs.
        qps: The client's ``--qps`` in the runs, named when throttling is the next limit.
        burst: The client's ``--burst`` in the runs.

    Raises:
        ValueError: No fixed value was measured.
    """
    groups = outcomes(results)
    if not groups:
        raise ValueError("no results to recommend from")
    refused = _unranked(results, groups[0].concurrency)
    if refused is not None:
        return refused
    margin, how = noise(groups)
    reasons = [how]
    best = groups[0]
    for o in groups[1:]:
        better, sentence = _compare(best, o, margin)
        reasons.append(sentence)
        if better:
            best = o
    above = [o for o in groups if o.concurrency > best.concurrency]
    limit, why = next_limit(best, groups[0], above[0] if above else None, qps=qps, burst=burst)
    reasons.append(why)
    verdicts = adaptive_outcomes(results)
    reasons += _adaptive(results, verdicts)
    if limit == "concurrency":
        action = "raise-further"
    else:
        action = "raise" if best.concurrency > groups[0].concurrency else "keep"
    checks = tuple(advise_checks(groups, margin, _compare))
    return Recommendation(
        best.concurrency, action, tuple(reasons), limit, margin, tuple(verdicts), checks
    )
