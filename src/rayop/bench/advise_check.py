"""Checks ``rayop advise`` against the bench: did the alternative it pointed to measure better?

Each fixed run carries what ``rayop advise`` said from that run's own metrics (its ``advice``).
The bench also ran other values, so the advice can be checked against a measured outcome, with
the comparison the recommendation itself uses (time to ready and queue wait p99 beyond the noise,
no error rise, no time-out): a raise agrees when the value it names (or the next value measured
above) did better; a keep agrees when the next value measured above did not; a lower agrees when
the value it names (or the next measured below) did as well.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rayop.bench.outcomes import Outcome

Compare = Callable[[Outcome, Outcome, float], tuple[bool, str]]


@dataclass(frozen=True, slots=True)
class AdviseCheck:
    """One run's advice beside the outcome measured at the value it pointed to."""

    concurrency: int
    said: str
    """The advice's headline ("raise to 2", "keep", ...)."""
    next_limit: str | None
    alternative: int
    alternative_better: bool
    agrees: bool

    @property
    def sentence(self) -> str:
        """The check in words."""
        outcome = "better" if self.alternative_better else "not better"
        word = "agrees" if self.agrees else "DISAGREES"
        limit = f" (next limit {self.next_limit})" if self.next_limit else ""
        return (
            f"at {self.concurrency}, rayop advise said {self.said}{limit}; "
            f"{self.alternative} measured {outcome} beyond the noise: {word}"
        )

    def to_json(self) -> dict[str, object]:
        """Returns the check as a JSON-ready mapping."""
        return {
            "concurrency": self.concurrency,
            "said": self.said,
            "next_limit": self.next_limit,
            "alternative": self.alternative,
            "alternative_better": self.alternative_better,
            "agrees": self.agrees,
        }


def _pick(groups: Sequence[Outcome], o: Outcome, action: str, to: int | None) -> Outcome | None:
    by_value = {g.concurrency: g for g in groups}
    if to is not None and to in by_value:
        return by_value[to]
    if action == "lower":
        below = [g for g in groups if g.concurrency < o.concurrency]
        return below[-1] if below else None
    above = [g for g in groups if g.concurrency > o.concurrency]
    return above[0] if above else None


def advise_checks(groups: Sequence[Outcome], margin: float, compare: Compare) -> list[AdviseCheck]:
    """Returns a check per fixed value whose first run carries a verdict and an alternative."""
    checks = []
    for o in groups:
        advice = o.runs[0].advice
        if advice is None or advice.get("verdict") not in ("raise", "keep", "lower"):
            continue
        action = str(advice["verdict"])
        to = advice.get("to")
        alt = _pick(groups, o, action, to if isinstance(to, int) else None)
        if alt is None:
            continue
        if alt.concurrency > o.concurrency:
            better, _ = compare(o, alt, margin)
        else:
            higher_better, _ = compare(alt, o, margin)
            better = not higher_better
        agrees = better if action in ("raise", "lower") else not better
        said = f"{action} to {to}" if action != "keep" else "keep"
        limit = advice.get("next_limit")
        checks.append(
            AdviseCheck(
                o.concurrency, said, limit if isinstance(limit, str) else None,
                alt.concurrency, better, agrees,
            )
        )  # fmt: skip
    return checks
