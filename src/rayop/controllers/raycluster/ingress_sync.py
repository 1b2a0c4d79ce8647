"""The ingress step of a RayCluster reconcile: create ``<cluster>-head-ingress``, repair drift.

KubeRay v1.7.0's ``reconcileIngressKubernetes``: with ``headGroupSpec.enableIngress`` (and not on
OpenShift, where ``route.py`` makes a Route unless ``USE_INGRESS_ON_OPENSHIFT=true``) the head
Ingress is built (:func:`~rayop.controllers.raycluster.services.build_head_ingress`) and

- created when absent (Normal ``CreatedIngress``; a create that answers AlreadyExists only means
  the lazily started Ingress cache lagged, and the next pass looks again);
- left alone, with a Warning ``FailedToCreateIngress``, when an Ingress of that name exists but
  is not controlled by this RayCluster (the operator never modifies what it did not create);
- otherwise compared with the desired one on exactly KubeRay's fields: the labels, the
  annotations and the whole ``spec`` (a ``spec.ingressClassName`` the desired Ingress leaves
  unset keeps the live value, which a DefaultIngressClass admission plugin may have set). Any
  difference is written back with one update (Normal ``UpdatedIngress``, or Warning
  ``FailedToUpdateIngress`` and the error).

KubeRay does not watch Ingresses, so drift is repaired on the cluster's next pass (the periodic
requeue at the latest). The grant this needs on ``networking.k8s.io/ingresses`` is list, watch
(the cache), create and update.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit.recorded_write import create_with_events, write_with_events
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster import route, services
from rayop.controllers.raycluster.context import PassContext
from rayop.kube.resources import INGRESSES
from rayop.runtime.steps import Stop


def _omit_empty(value: Any) -> Any:
    """Returns ``value`` without empty strings, lists, maps and nulls (Go's ``omitempty``), so a
    field the server leaves out equals one sent empty."""
    if isinstance(value, Mapping):
        kept = {k: _omit_empty(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_omit_empty(v) for v in value]
    return value


def controlled_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Tells whether ``obj`` has a controller ownerReference to the object with ``uid``."""
    return any(
        ref.get("controller") is True and ref.get("uid") == uid
        for ref in cs.meta(obj).get("ownerReferences") or []
    )


def ingress_update(
    existing: Mapping[str, Any], desired: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Returns ``existing`` with KubeRay's managed fields set from ``desired``, or None when they
    already agree (KubeRay's ``ingressNeedsUpdate``).

    Labels and annotations are replaced as whole maps; the spec is replaced as a whole, except
    that an ``ingressClassName`` the desired spec leaves unset keeps the live value.
    """
    updated = copy.deepcopy(dict(existing))
    meta = updated.setdefault("metadata", {})
    desired_meta = cs.meta(desired)
    changed = False
    for key in ("labels", "annotations"):
        want = dict(desired_meta.get(key) or {})
        if dict(meta.get(key) or {}) != want:
            meta[key] = want
            changed = True
    want_spec = copy.deepcopy(dict(desired.get("spec") or {}))
    live_spec = dict(existing.get("spec") or {})
    if want_spec.get("ingressClassName") is None and "ingressClassName" in live_spec:
        want_spec["ingressClassName"] = live_spec["ingressClassName"]
    if _omit_empty(live_spec) != _omit_empty(want_spec):
        updated["spec"] = want_spec
        changed = True
    return updated if changed else None


async def reconcile_ingress(ctx: PassContext) -> Stop | None:
    """Creates the head Ingress when absent and repairs its drift (see the module docstring).

    Raises:
        ApiError: the create or the update failed (a 409 included: the next pass retries).
    """
    rc = ctx.rc
    if not rc.spec.head_group_spec.enable_ingress:
        return None
    if route.uses_route(ctx.deps.options):
        return None  # a Route instead
    desired = services.build_head_ingress(rc)
    name = cs.name(desired)
    existing = ctx.deps.informers.informer(INGRESSES).get(ctx.namespace, name)
    if existing is None:
        await _create(ctx, desired)
        return None
    where = f"{ctx.namespace}/{name}"
    if not controlled_by(existing, ctx.uid):
        ctx.event(
            "Warning",
            ev.FAILED_TO_CREATE_INGRESS,
            f"Ingress {where} already exists and is not owned by this RayCluster; not modifying it",
            action=ev.ACTION_CREATE,
        )
        return None
    updated = ingress_update(existing, desired)
    if updated is None:
        return None
    updated.setdefault("apiVersion", "networking.k8s.io/v1")
    updated.setdefault("kind", "Ingress")
    await write_with_events(
        ctx,
        ctx.deps.client.update(INGRESSES, updated),
        action=ev.ACTION_UPDATE,
        done=(ev.UPDATED_INGRESS, f"Updated ingress {where}"),
        failed=(ev.FAILED_TO_UPDATE_INGRESS, f"Failed updating ingress {where}, "),
    )
    return None


async def _create(ctx: PassContext, ingress: dict[str, Any]) -> None:
    where = f"{ctx.namespace}/{cs.name(ingress)}"
    await create_with_events(
        ctx,
        ctx.deps.client.create(INGRESSES, ingress, namespace=ctx.namespace),
        action=ev.ACTION_CREATE,
        done=(ev.CREATED_INGRESS, f"Created ingress {where}"),
        failed=(ev.FAILED_TO_CREATE_INGRESS, f"Failed creating ingress {where}, "),
    )
