"""What the embedded Gateway implementation shares: its names, condition entries, ReferenceGrants.

* :data:`CONTROLLER_NAME` is the ``spec.controllerName`` of the GatewayClasses it implements;
  :data:`BUILTIN_CLASSES` are the classes the plane creates once the Gateway API CRDs are
  served: ``rayop`` and ``istio`` (the class KubeRay's incremental-upgrade sample names; there is
  no Istio on the embedded plane, so the plane answers for it);
* :func:`condition` builds one status condition and :func:`keep_transition_times` carries the
  ``lastTransitionTime`` of a condition whose status did not change, as ``meta.SetStatusCondition``
  does;
* :func:`reference_permitted` tells whether a reference into another namespace is allowed by a
  ReferenceGrant there (gateway.networking.k8s.io/v1beta1), and :func:`core_reference` checks a
  reference to a core object (a listener's Secret, a route's Service) with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from rayop.apimachinery.objects import Obj

GROUP: Final = "gateway.networking.k8s.io"
CONTROLLER_NAME: Final = "rayop.dev/embedded-gateway"
BUILTIN_CLASSES: Final = ("rayop", "istio")
"""GatewayClasses the plane creates; ``istio`` is what KubeRay's sample asks for."""


def condition(
    type_: str, ok: bool, reason: str, message: str, generation: Any, now: str
) -> dict[str, Any]:
    """Returns one condition (status ``True`` when ``ok``) at ``generation``."""
    return {
        "type": type_,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": now,
    }


def keep_transition_times(
    new: list[dict[str, Any]], old: Iterable[Mapping[str, Any]] | None
) -> list[dict[str, Any]]:
    """Gives each new condition the old one's ``lastTransitionTime`` when its status is the same.

    Returns ``new`` (changed in place).
    """
    before = {c.get("type"): c for c in old or () if isinstance(c, Mapping)}
    for cond in new:
        prior = before.get(cond["type"])
        if prior is not None and prior.get("status") == cond["status"]:
            cond["lastTransitionTime"] = prior.get("lastTransitionTime", cond["lastTransitionTime"])
    return new


def reference_permitted(
    grants: Iterable[Obj],
    *,
    from_kind: str,
    from_namespace: str,
    to_group: str,
    to_kind: str,
    to_name: str,
) -> bool:
    """Tells whether one of ``grants`` (the ReferenceGrants of the target's namespace) lets a
    ``from_kind`` of ``from_namespace`` refer to the ``to_kind`` named ``to_name``."""
    for grant in grants:
        spec = grant.get("spec") or {}
        sources = spec.get("from") or []
        targets = spec.get("to") or []
        if not any(
            s.get("group") == GROUP
            and s.get("kind") == from_kind
            and s.get("namespace") == from_namespace
            for s in sources
        ):
            continue
        for target in targets:
            if (
                (target.get("group") or "") == to_group
                and target.get("kind") == to_kind
                and target.get("name") in (None, "", to_name)
            ):
                return True
    return False


def core_reference(
    ref: Mapping[str, Any],
    *,
    from_kind: str,
    from_namespace: str,
    to_kind: str,
    grants: Callable[[str], Iterable[Obj]],
) -> tuple[str, str, str | None]:
    """Checks a reference to a core ``to_kind`` made by a ``from_kind`` of ``from_namespace``.

    Returns:
        (namespace, name, problem): problem ``"kind"`` when the reference names another group or
        kind, ``"grant"`` when it points into another namespace whose ReferenceGrants do not
        allow it, None when it may be followed.
    """
    name = str(ref.get("name") or "")
    where = str(ref.get("namespace") or from_namespace)
    if (ref.get("group") or "") != "" or (ref.get("kind") or to_kind) != to_kind:
        return where, name, "kind"
    if where != from_namespace and not reference_permitted(
        grants(where),
        from_kind=from_kind,
        from_namespace=from_namespace,
        to_group="",
        to_kind=to_kind,
        to_name=name,
    ):
        return where, name, "grant"
    return where, name, None
