"""One window's advice: which operator, what its API client showed, a verdict per controller."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rayop.advise.evidence import (
    ClientEvidence,
    Scrape,
    client_evidence,
    controller_evidence,
    counter_reset,
)
from rayop.advise.identity import Operator
from rayop.advise.verdict import Verdict, cannot_tell, decide


@dataclass(frozen=True, slots=True)
class Advice:
    """The verdicts on one window of one operator's metrics."""

    operator: Operator
    source: str
    seconds: float
    scrapes: int
    client: ClientEvidence
    verdicts: tuple[Verdict, ...]

    def to_json(self) -> dict[str, object]:
        """Returns the advice as a JSON-ready mapping."""
        c = self.client
        return {
            "operator": self.operator.name,
            "source": self.source,
            "window_seconds": round(self.seconds, 3),
            "scrapes": self.scrapes,
            "api": {
                "requests": c.requests,
                "latency_mean_seconds": c.latency_mean,
                "latency_first_half_seconds": c.latency_first_half,
                "latency_second_half_seconds": c.latency_second_half,
                "p99_seconds": c.p99,
                "throttle_wait_mean_seconds": c.throttle_mean,
                "verbs": [
                    {
                        "verb": v.verb,
                        "requests": v.requests,
                        "p50_seconds": v.p50,
                        "p99_seconds": v.p99,
                        "throttle_wait_mean_seconds": v.throttle_mean,
                    }
                    for v in c.verbs
                ],
            },
            "controllers": [v.to_json() for v in self.verdicts],
        }


def advise(operator: Operator, source: str, window: Sequence[Scrape]) -> Advice:
    """Returns the advice on ``window`` (at least two scrapes) of ``operator``'s metrics."""
    last = window[-1].snapshot
    client = client_evidence(window)
    reset = counter_reset(window)
    verdicts = []
    for name in operator.controllers:
        workers = int(last.total("controller_runtime_max_concurrent_reconciles", controller=name))
        if reset is not None:
            verdicts.append(
                cannot_tell(
                    name,
                    workers,
                    f"{reset} fell during the window: the operator restarted, read it again",
                )
            )
        else:
            verdicts.append(decide(controller_evidence(name, window), client, operator.cores))
    return Advice(
        operator=operator,
        source=source,
        seconds=window[-1].t - window[0].t,
        scrapes=len(window),
        client=client,
        verdicts=tuple(verdicts),
    )
