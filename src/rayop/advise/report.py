"""Writes advice for a terminal: what was read, then each controller's verdict and its evidence."""

from __future__ import annotations

from rayop.advise.advice import Advice
from rayop.advise.compare import Comparison
from rayop.advise.format import fmt_seconds


def render(advice: Advice) -> str:
    """Returns the advice as plain text, one paragraph per controller."""
    c = advice.client
    lines = [
        f"Reading {advice.operator.name} at {advice.source}: {advice.scrapes} scrapes over "
        f"{advice.seconds:.0f} s; controllers: {', '.join(advice.operator.controllers)}.",
        f"API client: {c.requests:g} requests, latency (throttling excluded) mean "
        f"{fmt_seconds(c.latency_mean)}, p99 {fmt_seconds(c.p99)}, token-bucket wait "
        f"{fmt_seconds(c.throttle_mean)} per request.",
    ]
    lines += [
        f"  {v.verb}: {v.requests:g} requests, p50 {fmt_seconds(v.p50)}, p99 {fmt_seconds(v.p99)}"
        for v in c.verbs
    ]
    for verdict in advice.verdicts:
        limit = f" (next limit: {verdict.next_limit})" if verdict.next_limit else ""
        lines.append("")
        lines.append(f"{verdict.controller}: {verdict.headline}{limit}")
        lines += [f"  - {reason}" for reason in verdict.reasons]
    return "\n".join(lines) + "\n"


def render_comparison(comparison: Comparison) -> str:
    """Returns the before/after verdict and its reasons as plain text."""
    lines = [f"Before and after the change: {comparison.verdict}"]
    lines += [f"  - {reason}" for reason in comparison.reasons]
    return "\n".join(lines) + "\n"
