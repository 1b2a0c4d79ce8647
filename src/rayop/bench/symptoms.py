"""Explains a concurrency verdict by its symptoms and names what limits the operator next.

The thresholds are :mod:`rayop.runtime.concurrency.rules`, shared with ``rayop advise``.
Symptoms never overrule the measured outcome (:mod:`rayop.bench.recommend` decides on that);
they say why it came out so and where to look next: the client token bucket when its wait per
request grew, the API server when its latency (throttling excluded) grew, more concurrency
when the workers were still saturated at the highest value tested, nothing when they were not.
"""

from __future__ import annotations

from rayop.advise.format import fmt_seconds
from rayop.bench.outcomes import Outcome
from rayop.runtime.concurrency import rules


def saturated(o: Outcome) -> bool:
    """Tells whether the workers were all busy most of the time while the queue backed up."""
    return rules.saturated(o.busy, o.wait_p99)


def _state(o: Outcome) -> str:
    return (
        f"at {o.concurrency}: workers were all busy {o.busy:.0%} of the time, queue wait p99 "
        f"{fmt_seconds(o.wait_p99)}, reconcile time p50 {fmt_seconds(o.reconcile_p50)}"
    )


def _pairs(best: Outcome, lowest: Outcome, above: Outcome | None) -> list[tuple[Outcome, Outcome]]:
    pairs = []
    if best.concurrency != lowest.concurrency:
        pairs.append((lowest, best))
    if above is not None:
        pairs.append((best, above))
    return pairs


def next_limit(
    best: Outcome,
    lowest: Outcome,
    above: Outcome | None,
    *,
    qps: float | None = None,
    burst: int | None = None,
) -> tuple[str | None, str]:
    """Returns what limits the operator at ``best`` and the sentence that says so.

    Args:
        best: The chosen value.
        lowest: The lowest value measured (the before of a raise).
        above: The next value measured above ``best`` (the after of the raise not taken).
        qps: The client's ``--qps``, quoted in the advice.
        burst: The client's ``--burst``.

    Returns:
        ``("qps" | "api-server" | "concurrency" | None, sentence)``.
    """
    pairs = _pairs(best, lowest, above)
    for before, after in pairs:
        if rules.throttle_rose(before.throttle, after.throttle):
            now = (
                f" (now --qps {qps:g} --burst {burst})"
                if qps is not None and burst is not None
                else ""
            )
            return "qps", (
                f"client throttling wait per request grew from {fmt_seconds(before.throttle)} at "
                f"{before.concurrency} to {fmt_seconds(after.throttle)} at {after.concurrency}: "
                f"the client token bucket is the next limit, raise --qps and --burst{now}"
            )
    for before, after in pairs:
        if rules.latency_rose(before.api, after.api):
            return "api-server", (
                f"API latency without throttling grew from {fmt_seconds(before.api)} at "
                f"{before.concurrency} to {fmt_seconds(after.api)} at {after.concurrency}: the API "
                "server's capacity is the next limit, more workers only add contention there"
            )
    if above is None and saturated(best):
        return "concurrency", (
            f"{_state(best)}: still saturated at the highest value tested, measure higher values"
        )
    if saturated(best):
        return None, (
            f"{_state(best)}: saturated, yet {above.concurrency if above else 'more'} did not "
            "pay off beyond the noise, with no throttling or API latency rise to blame"
        )
    return None, f"{_state(best)}: concurrency is no longer the bottleneck"
