"""Turns one window's evidence into a verdict per controller: raise, keep, lower, or cannot tell.

The rule, in order (thresholds from :mod:`rayop.runtime.concurrency.rules`, the ones
``rayop bench`` uses):

1. **Cannot tell yet** when the window cannot be read or says too little: a counter fell (the
   process restarted), fewer than ``MIN_SCRAPES`` scrapes, or fewer than ``MIN_PASSES``
   reconciles (an idle operator). Never a guess.
2. **The client's token bucket first.** A mean token-bucket wait per request of 50 ms or more,
   or of 10 ms and at least the API server's own latency (requests spend more time in the bucket
   than at the server), or one that grew over the window: more workers would only queue at the
   bucket; raise
   ``--qps``/``--burst`` first (keep; lower when the workers are not saturated and more than one
   runs, since they gain nothing).
3. **A slow or slowing API**: the API latency (throttling excluded) rose over the window, or
   stands at twice its base (the lowest of any scrape interval with 20 requests, as the adaptive
   law's Vegas base) and 20 ms above it, or its p99 is above the Kubernetes 1 s SLO, or the
   controller's own pass time rose over the window while saturated: more workers only add
   contention (keep; lower by half when saturated, as the adaptive law's multiplicative decrease
   does).
4. **Errors**: a reconcile error share of 10 % or more: find why before adding workers (keep).
   **CPU**: saturated while the operator's process used 90 % of the cores its reconciles can
   run on (rayop: one, the interpreter's), more workers share the same core (keep).
5. **Saturated with a backlog and a calm API: raise.** To the workers the arrivals need at 80 %
   busy (Little's law: arrivals per second x mean pass time / 0.8), at least one more and at
   most twice the present number (the adaptive law's slow start doubles at most).
6. Otherwise **keep**: the workers are not the bottleneck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rayop.advise.evidence import ClientEvidence, ControllerEvidence
from rayop.advise.format import fmt_seconds as seconds
from rayop.runtime.concurrency import rules

MIN_SCRAPES = 3
MIN_PASSES = 10
"""Below this many reconciles in the window, no verdict: the operator was (nearly) idle."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with one controller's ``--reconcile-concurrency``, and why."""

    controller: str
    action: str
    """"raise", "keep", "lower" or "cannot-tell"."""
    workers: int
    """The present number of workers."""
    to: int | None
    """The number to move to (raise and lower only)."""
    reasons: tuple[str, ...]
    next_limit: str | None = None
    """"qps" (the client token bucket), "api-server", "errors", "cpu" (the operator's own
    process), "concurrency" or None."""

    @property
    def headline(self) -> str:
        """The verdict in a few words."""
        if self.action in ("raise", "lower"):
            return f"{self.action} to {self.to}"
        return "cannot tell yet" if self.action == "cannot-tell" else "keep"

    def to_json(self) -> dict[str, object]:
        """Returns the verdict as a JSON-ready mapping."""
        return {
            "controller": self.controller,
            "verdict": self.action,
            "workers": self.workers,
            "to": self.to,
            "next_limit": self.next_limit,
            "reasons": list(self.reasons),
        }


def _state(e: ControllerEvidence) -> str:
    return (
        f"{e.workers} worker(s) all busy in {e.busy:.0%} of the scrapes, queue depth "
        f"{e.depth_first:g} -> {e.depth_last:g} (max {e.depth_max:g}, {e.depth_slope:+.1f}/min), "
        f"queue wait p50 {seconds(e.wait_p50)} p99 {seconds(e.wait_p99)}, pass time p50 "
        f"{seconds(e.pass_p50)} p99 {seconds(e.pass_p99)}, {e.passes:g} passes, "
        f"errors {e.error_share:.0%}"
    )


def _api(c: ClientEvidence) -> str:
    return (
        f"API latency (throttling excluded) {seconds(c.latency_first_half)} -> "
        f"{seconds(c.latency_second_half)} over the window (lowest {seconds(c.latency_base)}), "
        f"p99 {seconds(c.p99)}, "
        f"token-bucket wait {seconds(c.throttle_mean)} per request"
    )


def cannot_tell(controller: str, workers: int, why: str) -> Verdict:
    """Returns the verdict for a window too thin to read."""
    return Verdict(controller, "cannot-tell", workers, None, (why,))


def _throttled(c: ClientEvidence) -> bool:
    return rules.throttled(c.throttle_mean, c.latency_mean) or rules.throttle_rose(
        c.throttle_first_half, c.throttle_second_half
    )


def _api_slow(c: ClientEvidence) -> bool:
    return (
        rules.latency_rose(c.latency_first_half, c.latency_second_half)
        or rules.api_queueing(c.latency_mean, c.latency_base)
        or (c.p99 is not None and c.p99 > rules.API_P99_SLO_SECONDS and not _throttled(c))
    )


def _needed(e: ControllerEvidence) -> int:
    demand = e.arrivals_per_second * (e.pass_mean or 0.0) / rules.TARGET_UTILISATION
    return min(2 * e.workers, max(e.workers + 1, math.ceil(demand)))


def decide(e: ControllerEvidence, c: ClientEvidence, cores: float | None = None) -> Verdict:
    """Returns the verdict on controller ``e`` given the client's evidence ``c`` and the cores
    the operator's reconciles can use (None: unknown)."""
    name, n = e.controller, e.workers
    if e.scrapes < MIN_SCRAPES:
        return cannot_tell(name, n, f"only {e.scrapes} scrapes: widen --window")
    if e.passes < MIN_PASSES:
        return cannot_tell(
            name,
            n,
            f"only {e.passes:g} reconciles in {e.seconds:.0f} s (at least {MIN_PASSES} needed): "
            "the controller was idle; read it again while it works, or over a longer --window",
        )
    busy = rules.saturated(e.busy, e.wait_p99, queue_growing=e.queue_growing)
    state, api = _state(e), _api(c)
    if _throttled(c):
        why = (
            f"{api}: the client's token bucket limits the operator; raise --qps and --burst "
            "first, more workers would only wait at the bucket"
        )
        if not busy and n > 1:
            return Verdict(name, "lower", n, max(1, math.ceil(e.mean_active)), (state, why), "qps")
        return Verdict(name, "keep", n, None, (state, why), "qps")
    slow_pass = busy and rules.pass_time_rose(e.pass_p50_first_half, e.pass_p50_second_half)
    if _api_slow(c) or slow_pass:
        why = (
            f"{api}; pass time p50 {seconds(e.pass_p50_first_half)} -> "
            f"{seconds(e.pass_p50_second_half)}: the API server is slow or slowing, more "
            "workers only add contention there"
        )
        if busy and n > 1:
            return Verdict(name, "lower", n, max(1, n // 2), (state, why), "api-server")
        return Verdict(name, "keep", n, None, (state, why), "api-server")
    if e.error_share >= rules.ERRORS_HIGH:
        why = f"reconcile errors are {e.error_share:.0%} of passes: find why before adding workers"
        return Verdict(name, "keep", n, None, (state, why), "errors")
    if busy and rules.cpu_bound(c.cores_used, cores):
        why = (
            f"the operator's process used {c.cores_used:.2f} of the {cores:g} core(s) its "
            "reconciles can run on: it is CPU-bound, more workers would share the same core"
        )
        return Verdict(name, "keep", n, None, (state, why), "cpu")
    if busy:
        to = _needed(e)
        why = (
            f"{api}: saturated with a backlog and a calm API; "
            f"{e.arrivals_per_second:.2f} arrivals/s x {seconds(e.pass_mean)} mean pass time "
            f"/ {rules.TARGET_UTILISATION:.0%} busy needs {to} worker(s) (at most twice today's)"
        )
        return Verdict(name, "raise", n, to, (state, why), "concurrency")
    why = f"{api}: the workers are not saturated, concurrency is not the bottleneck"
    return Verdict(name, "keep", n, None, (state, why))
