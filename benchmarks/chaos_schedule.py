"""The chaos campaign's seeded plan: every fault and every user action of one seed, with its time
(benchmarks/chaos.py; not a test).

A seed fixes the plan completely: which faults start when, for how long and with which settings,
and which user action runs when, on which object. Replaying a seed replays the same plan; what
the operator is doing at each instant still depends on real timing (the plane and the operator
run in real time), as in etcd's robustness tests, where a failpoint schedule is replayed on a
live cluster (https://github.com/etcd-io/etcd/tree/main/tests/robustness).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACTIONS",
    "KILL_KINDS",
    "STORM_PARTS",
    "Action",
    "Fault",
    "Plan",
    "make_plan",
]

KILL_KINDS = ("kill", "kill-after-pod-create", "kill-after-submit")
"""SIGKILL now; SIGKILL right after the next pod create commits; right after the next job
submission is accepted by a Ray head."""

STORM_PARTS = (
    "api-errors",  # 429 and 500 answers at a rate
    "api-slow",  # added latency on every call
    "api-conflicts",  # 409 on updates and patches
    "watch-drop",  # every watch closed after a few events, history short: resumes get 410
    "watch-lag",  # every watch event held back
    "dashboard-down",  # every dashboard call answered 503
    "dashboard-slow",  # every dashboard answer held back
    "dashboard-garbage",  # 200 with malformed JSON or wrong types
)

ACTIONS = (
    "scale-cluster",
    "scale-cluster",
    "scale-cluster",
    "edit-cluster",
    "replace-cluster",
    "new-rayjob",
    "delete-rayjob",
    "upgrade-rayservice",
    "edit-rayservice",
    "scale-rayservice",
    "scale-rayservice",
)
"""User actions, drawn uniformly (scaling appears more than once: it is what users do most)."""


@dataclass(frozen=True)
class Fault:
    """One fault: a kill (``kind`` in :data:`KILL_KINDS`), a storm (``kind == "storm"``, its
    ``parts`` from :data:`STORM_PARTS` overlapping for ``duration`` seconds) or a lost Lease
    (``kind == "lease-lost"``: the API slow and the Lease taken over by another holder)."""

    at: float
    kind: str
    duration: float = 0.0
    parts: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Action:
    """One user action at ``at`` seconds; ``pick`` chooses the object, ``value`` the change."""

    at: float
    kind: str
    pick: int
    value: int


@dataclass(frozen=True)
class Plan:
    """Everything one seed does, in time order."""

    seed: int
    duration: float
    faults: tuple[Fault, ...]
    actions: tuple[Action, ...]

    def counts(self) -> dict[str, int]:
        """Faults planned by kind (storm parts counted as ``storm:<part>``)."""
        out: dict[str, int] = {}
        for f in self.faults:
            out[f.kind] = out.get(f.kind, 0) + 1
            for part in f.parts:
                out[f"storm:{part}"] = out.get(f"storm:{part}", 0) + 1
        return out


_GARBAGE = (
    '{"status": 7, "submission_id": ["x"], "start_time": "soon"}',
    '{"applications": 5}',
    '{"applications": {"app0": {"status": {"nested": true}, "deployments": "none"}}}',
    "[1, 2, 3",
    '"just a string"',
    "<html><body>502 Bad Gateway</body></html>",
    '{"status": "RUNNING", "submission_id": null, "end_time": -1e308}',
    "null",
)


def _storm(rng: random.Random, at: float, kinds: tuple[str, ...]) -> Fault:
    parts = tuple(sorted(rng.sample(kinds, rng.randint(min(2, len(kinds)), min(4, len(kinds))))))
    settings: dict[str, Any] = {
        "error_429_rate": round(rng.uniform(0.1, 0.4), 2),
        "error_500_rate": round(rng.uniform(0.05, 0.25), 2),
        "latency": round(rng.uniform(0.2, 1.5), 2),
        "conflict_rate": round(rng.uniform(0.1, 0.4), 2),
        "watch_drop_after_events": rng.randint(1, 5),
        "watch_delay": round(rng.uniform(0.5, 2.5), 2),
        "dashboard_delay": round(rng.uniform(1.0, 4.0), 2),
        "garbage": rng.choice(_GARBAGE),
    }
    return Fault(at, "storm", round(rng.uniform(3.0, 8.0), 2), parts, settings)


def make_plan(
    seed: int,
    *,
    duration: float,
    kills: int,
    storms: int,
    lease_losses: int,
    storm_parts: tuple[str, ...] = STORM_PARTS,
) -> Plan:
    """Draws one seed's plan: ``kills`` kills spread over ``duration`` seconds (each at a random
    instant of its share, and then a random 0.2 to 4 s after the operator leads again, so that
    it hits the operator at work at an instant no workload event predicts), ``storms`` storms and
    ``lease_losses`` lost Leases at random instants, and a user action every 0.5 to 2.5 s."""
    rng = random.Random(seed)
    faults: list[Fault] = []
    share = duration / max(kills, 1)
    for i in range(kills):
        at = round(i * share + rng.uniform(0.2, 0.95) * share, 2)
        after = round(rng.uniform(0.2, 4.0), 2)
        faults.append(Fault(at, rng.choice(KILL_KINDS), settings={"after_leading": after}))
    for _ in range(storms):
        faults.append(_storm(rng, round(rng.uniform(0.0, duration - 3.0), 2), storm_parts))
    for _ in range(lease_losses):
        at = round(rng.uniform(0.0, duration - 3.0), 2)
        faults.append(Fault(at, "lease-lost", 12.0, (), {"latency": 1.5}))
    actions: list[Action] = []
    t = rng.uniform(1.0, 3.0)
    while t < duration:
        actions.append(
            Action(round(t, 2), rng.choice(ACTIONS), rng.randrange(1 << 16), rng.randrange(1 << 16))
        )
        t += rng.uniform(0.5, 2.5)
    faults.sort(key=lambda f: f.at)
    return Plan(seed, duration, tuple(faults), tuple(actions))
