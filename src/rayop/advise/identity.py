"""Which operator a set of metrics comes from: rayop, KubeRay, or neither.

Both export controller-runtime's series under the same controller names (``raycluster``,
``rayjob``, ``rayservice``, ``raycronjob``: the lower-cased kind, controller-runtime's default
name, as KubeRay v1.7.0's ``ray-operator/controllers/ray/*_controller.go`` leave it). rayop adds
series of its own (``rayop_*``); KubeRay is a Go process (``go_info``, from the Go collector that
controller-runtime registers).
"""

from __future__ import annotations

from dataclasses import dataclass

from rayop.advise.errors import AdviseInputError
from rayop.advise.exposition import Snapshot

RAY_CONTROLLERS = ("raycluster", "rayjob", "rayservice", "raycronjob")
"""The controllers a Ray operator runs (others, such as ``networkpolicy``, are read too)."""


@dataclass(frozen=True, slots=True)
class Operator:
    """The operator behind the metrics and the controllers it runs."""

    name: str
    """"rayop" or "KubeRay"."""
    controllers: tuple[str, ...]
    cores: float | None = None
    """The cores its reconciles can use at once: 1 for rayop (CPython runs Python code on one
    core at a time); None for KubeRay (a Go process runs on every core it is given, and how many
    that is does not show in its metrics)."""


def controllers(snapshot: Snapshot) -> tuple[str, ...]:
    """Returns the controller names with controller-runtime reconcile series, sorted."""
    names = snapshot.by_label("controller_runtime_max_concurrent_reconciles", "controller")
    names.update(snapshot.by_label("controller_runtime_reconcile_total", "controller"))
    return tuple(sorted(n for n in names if n))


def identify(snapshot: Snapshot, *, source: str) -> Operator:
    """Tells which operator ``snapshot`` comes from.

    Raises:
        AdviseInputError: the page has no controller-runtime series, or they come from an
            operator that runs none of the Ray controllers.
    """
    found = controllers(snapshot)
    if not found:
        raise AdviseInputError(
            f"{source} has no controller-runtime series (controller_runtime_reconcile_total, "
            "controller_runtime_max_concurrent_reconciles): not a controller-runtime operator's "
            "metrics"
        )
    if not set(found) & set(RAY_CONTROLLERS):
        raise AdviseInputError(
            f"{source} comes from an unknown operator: its controllers are {', '.join(found)}, "
            f"none of {', '.join(RAY_CONTROLLERS)}"
        )
    names = {name for name, _ in snapshot.samples}
    if any(n.startswith("rayop_") for n in names):
        return Operator("rayop", found, cores=1.0)
    if "go_info" in names:
        return Operator("KubeRay", found)
    raise AdviseInputError(
        f"{source} runs the Ray controllers ({', '.join(found)}) but is neither rayop (no rayop_* "
        "series) nor KubeRay (no go_info): an unknown operator"
    )
