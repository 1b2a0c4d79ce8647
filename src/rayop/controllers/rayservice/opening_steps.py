"""Steps that may end a RayService pass early: own writes, managedBy, deletion, validation.

* while the RayService cache still shows a version older than this controller's own last write
  of the RayService (status or finalizers), the pass does nothing: every decision below reads
  the status (the pending cluster's name above all), and a write over the stale copy could only
  fail with 409. The own-writes tracker enqueues the RayService again the moment the cache
  shows that write; the pass also requeues after 2 s;
* ``spec.managedBy`` other than ``ray.io/kuberay-operator`` leaves the object to another
  controller (MultiKueue);
* a RayService being deleted gets every cluster it created deleted at once (requeue after 2 s
  while any remains), then loses the ``ray.io/rayservice-finalizer``; otherwise the finalizer is
  added when missing, both with KubeRay's typed update (:func:`typed_spec`: it may bump
  ``metadata.generation``);
* an invalid spec (a feature whose gate is off included) gets a Warning event and
  ``Ready=False/ValidationFailed``, written when it changed, and no requeue:
  the next spec change triggers a new pass (KubeRay v1.7.0: ``RayServiceReconciler.Reconcile``
  in ``ray-operator/controllers/ray/rayservice_controller.go``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, cast

from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.rayservice import RayService
from rayop.api.rayservice import RayServiceConditionReason as Reason
from rayop.api.validation import Problem, validate_rayservice
from rayop.api.validation import Reason as ValidationReason
from rayop.controllers.gocompat.go_json import marshal_typed
from rayop.controllers.kit import settings as requeue
from rayop.controllers.kit.gate_checks import rayservice_gate_problems
from rayop.controllers.rayservice import settings
from rayop.controllers.rayservice.cleanup import delete_owned_clusters
from rayop.controllers.rayservice.context import PassContext
from rayop.controllers.rayservice.status import set_ready_false
from rayop.kube.resources import RAY_SERVICES
from rayop.runtime.informers.frozen import thaw
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import Stop

log = logging.getLogger(__name__)


async def wait_for_own_writes(ctx: PassContext) -> Stop | None:
    """Ends the pass, touching nothing, while the cache predates our own last write; never
    blocks."""
    if not ctx.deps.own_writes.cache_behind(ctx.cached):
        return None
    log.debug("RayService %s: cache behind our last write; waiting for it", ctx.request)
    return Stop.discarding_status(Result(requeue_after=requeue.RAYSERVICE_REQUEUE))


async def check_managed_by(ctx: PassContext) -> Stop | None:
    """Ends the pass when another controller manages the RayService; never blocks."""
    managed_by = ctx.spec.managed_by
    if managed_by and managed_by != MANAGED_BY_KUBERAY:
        log.info("RayService %s is managed by %s; skipping", ctx.request, managed_by)
        return Stop.discarding_status()
    return None


async def handle_deletion(ctx: PassContext) -> Stop | None:
    """Deletes the clusters of a RayService being deleted, then drops the finalizer; adds the
    finalizer to one that is not. Blocks on the deletes and the finalizer update.

    Raises:
        rayop.kube.errors.ApiError: a delete or the finalizer update failed.
    """
    meta = ctx.cached["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    if not meta.get("deletionTimestamp"):
        if settings.FINALIZER not in finalizers:
            await _set_finalizers(ctx, [*finalizers, settings.FINALIZER])
        return None
    if settings.FINALIZER not in finalizers:
        return Stop.discarding_status()
    if await delete_owned_clusters(ctx):
        return Stop.discarding_status(Result(requeue_after=requeue.RAYSERVICE_REQUEUE))
    await _set_finalizers(ctx, [f for f in finalizers if f != settings.FINALIZER])
    ctx.deps.serve_cache.forget(ctx.namespace, ctx.name)
    return Stop.discarding_status()


async def _set_finalizers(ctx: PassContext, finalizers: list[str]) -> None:
    """Writes the finalizers with an update of the whole RayService, its spec as KubeRay's
    typed update writes it (:func:`typed_spec`), at the cached resourceVersion (a 409 fails the
    pass, which is retried); the pass goes on with what the server stored."""
    body = thaw(ctx.cached)
    body["metadata"]["finalizers"] = finalizers
    body["spec"] = typed_spec(body.get("spec") or {})
    written = await ctx.deps.client.update(RAY_SERVICES, body)
    ctx.deps.own_writes.record(written)
    ctx.cached = written
    ctx.service = RayService.model_validate(written)


def typed_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Returns the RayService spec KubeRay sends when it updates the object.

    KubeRay v1.7.0 adds and removes ``ray.io/rayservice-finalizer`` with ``r.Update`` of the typed
    RayService (``rayservice_controller.go``): the spec it sends is Go's ``json.Marshal`` of the
    spec it decoded, not the JSON the user applied. Go writes the zero value of every field
    without ``omitempty`` and every struct even with it, so a spec applied without, say, a pod
    template's ``metadata``, a container's ``resources`` or a worker group's ``scaleStrategy``
    comes back with ``{}`` there (quantities in canonical form, unknown keys dropped; nulls the
    API server prunes). Such a spec differs from the stored one, so the API server bumps
    ``metadata.generation`` (1 -> 2) and ``observedGeneration`` follows. A value Go could not
    decode (it would not read the object at all) is written as it is.
    """
    return cast(
        dict[str, Any], json.loads(marshal_typed(spec, "ray/v1.RayServiceSpec", lenient=True))
    )


async def validate(ctx: PassContext) -> Stop | None:
    """Reports an invalid RayService (event + ``Ready=False/ValidationFailed``) and ends the
    pass, the status written when it changed; never blocks itself.
    """
    gates = ctx.deps.options.feature_gates
    problems = validate_rayservice(ctx.service, gates=gates.by_name())
    problems += [
        Problem(ValidationReason.INVALID_RAYSERVICE_SPEC, p)
        for p in rayservice_gate_problems(ctx.cached, gates)
    ]
    if not problems:
        return None
    first = problems[0]
    message = "; ".join(p.message for p in problems)
    note = first.event_message(ctx.namespace, ctx.name)
    ctx.event("Warning", first.reason, note, action=settings.ACTION_VALIDATE)
    set_ready_false(ctx, Reason.VALIDATION_FAILED, message)
    ctx.status["observedGeneration"] = ctx.generation
    return Stop.after_status_write()
