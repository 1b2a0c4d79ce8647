"""The ResourceQuota admission plugin: a create that would take a namespace's quota over its
hard limits is refused (403 Forbidden), and one that fits is charged to each covering quota's
``status.used``.

Pure: :func:`charge` takes the namespace's quotas and returns their new status (the write path
commits it in the same step as the object, so two creates cannot both take the last unit).
As kube-apiserver, a quota covers an object when its ``status.hard`` names something the object
uses and its scopes select it; a quota the controller has not filled in (no ``status.hard``)
covers nothing yet. Wording from ``k8s.io/apiserver/pkg/admission/plugin/resourcequota``:
https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go
Only creates are charged (kube's evaluators handle no update but a pod resize, which the plane
does not serve).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.quantity import Quantity, QuantityError
from rayop.sim.admission.quota_usage import (
    covered_names,
    missing_requests,
    object_usage,
    quota_selects,
)
from rayop.sim.machinery import errors as se
from rayop.sim.machinery.resources import ResourceInfo

__all__ = ["charge", "quantities", "render_quantities"]


def quantities(resources: Any) -> dict[str, Quantity]:
    """Parses a ResourceList (``status.hard``, ``status.used``); unparsable entries are dropped."""
    out: dict[str, Quantity] = {}
    if isinstance(resources, Mapping):
        for name, value in resources.items():
            try:
                out[str(name)] = Quantity.parse(value)
            except QuantityError:
                continue
    return out


def render_quantities(resources: Mapping[str, Quantity]) -> dict[str, str]:
    """A ResourceList as stored: names sorted, canonical quantities."""
    return {name: resources[name].canonical() for name in sorted(resources)}


def _pretty(resources: Mapping[str, Quantity]) -> str:
    return ",".join(f"{name}={resources[name].canonical()}" for name in sorted(resources))


def _refuse(info: ResourceInfo, name: str, said: str) -> se.StatusError:
    qualified = f"{info.plural}.{info.group}" if info.group else info.plural
    return se.forbidden(
        f'{qualified} "{name}" is forbidden: {said}',
        resource=info.plural,
        group=info.group,
        name=name,
    )


def charge(quotas: list[Obj], info: ResourceInfo, name: str, obj: Obj) -> list[tuple[Obj, Obj]]:
    """Checks a create of ``obj`` against the namespace's quotas.

    Returns:
        ``(quota, status)`` for each quota whose ``status.used`` grows by the object.

    Raises:
        StatusError: 403 Forbidden with kube-apiserver's message (exceeded quota, must
            specify, status unknown).
    """
    covering: list[tuple[Obj, list[str]]] = []
    for quota in sorted(quotas, key=lambda q: str(q["metadata"].get("name"))):
        status = quota.get("status") or {}
        covered = covered_names(info, status.get("hard") or {})
        if not covered or not quota_selects(quota, info, obj):
            continue
        quota_name = quota["metadata"].get("name", "")
        if info.key == "/pods":
            missing = missing_requests(obj, covered)
            if missing:
                raise _refuse(info, name, f"failed quota: {quota_name}: {missing}")
        if any(n not in (status.get("used") or {}) for n in covered):
            said = f"status unknown for quota: {quota_name}, resources: {','.join(covered)}"
            raise _refuse(info, name, said)
        covering.append((quota, covered))
    if not covering:
        return []
    usage = {n: v for n, v in object_usage(info, obj).items() if v != 0}
    out: list[tuple[Obj, Obj]] = []
    for quota, covered in covering:
        status = quota.get("status") or {}
        hard, used = quantities(status.get("hard")), quantities(status.get("used"))
        requested = {n: Quantity(usage[n]) for n in covered if n in usage}
        if not requested:
            continue
        new_used = dict(used)
        for n, amount in requested.items():
            new_used[n] = used[n] + amount if n in used else amount
        exceeded = sorted(n for n in requested if n in hard and new_used[n].value > hard[n].value)
        if exceeded:
            said = (
                f"exceeded quota: {quota['metadata'].get('name', '')}, "
                f"requested: {_pretty({n: requested[n] for n in exceeded})}, "
                f"used: {_pretty({n: used.get(n, Quantity(Fraction(0))) for n in exceeded})}, "
                f"limited: {_pretty({n: hard[n] for n in exceeded})}"
            )
            raise _refuse(info, name, said)
        out.append((quota, {**status, "used": render_quantities(new_used)}))
    return out
