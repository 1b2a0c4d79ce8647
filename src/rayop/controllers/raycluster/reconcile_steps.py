"""The gate steps and dependent-object steps of a RayCluster reconcile.

KubeRay v1.7.0: ``rayClusterReconcile`` in
``ray-operator/controllers/ray/raycluster_controller.go``.

Every step has the shape of :mod:`rayop.runtime.steps`. Gate steps end the pass early with a
:class:`~rayop.runtime.steps.Stop` (managedBy, validation, deletion); none of them lets the
status be recomputed, so each says :meth:`~rayop.runtime.steps.Stop.discarding_status` (the
validate step writes ``status.reason`` itself). Dependent steps create what the cluster needs
besides pods (autoscaler RBAC, auth secret, services) when it is absent from the cache
and return None; they never update or delete (KubeRay never updates a Service). A create that
answers AlreadyExists counts as done: the cache only lagged. Each step is idempotent.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from rayop.api import keys
from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.raycluster import RayClusterStatus
from rayop.api.validation import (
    Problem,
    Reason,
    autoscaler_v1_warning,
    raycluster_spec_problem,
    validate_raycluster,
    validate_raycluster_status,
)
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names, settings
from rayop.controllers.kit.gate_checks import raycluster_gate_problems
from rayop.controllers.kit.recorded_write import create_with_events
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster import rbac, services
from rayop.controllers.raycluster.context import PassContext
from rayop.controllers.raycluster.mtls.names import cert_manager_missing
from rayop.controllers.raycluster.pods import owner_reference
from rayop.controllers.raycluster.status_sync import write_status_reason
from rayop.kube.errors import NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import (
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from rayop.runtime.reconcile import Result
from rayop.runtime.steps import Stop


class InvalidStatusError(Exception):
    """The RayCluster's status is contradictory: the pass fails and is requeued with backoff
    (KubeRay returns it with a 2 s RequeueAfter, which controller-runtime ignores on error)."""


# -- gate steps ---------------------------------------------------------------------------------


async def check_managed_by(ctx: PassContext) -> Stop | None:
    """Ends the pass when another controller manages the cluster (``spec.managedBy``).

    It reads the wire spec: a cluster another controller manages is skipped even when its spec
    does not parse.
    """
    managed_by = cs.spec(ctx.cached).get("managedBy")
    if managed_by and managed_by != MANAGED_BY_KUBERAY:
        return Stop.discarding_status()
    return None


async def validate(ctx: PassContext) -> Stop | None:
    """Refuses a spec the controller cannot use: Warning event, ``status.reason``, no requeue.

    A spec that does not parse, or that uses a feature whose gate is off
    (``ctx.deps.options.feature_gates``), is refused the same way. When the reason cannot be
    written yet (the cache is behind our last status write), the pass requeues after 2 s.

    Raises:
        InvalidStatusError: the status is contradictory (requeued with backoff).
        Conflict: the status write lost a race.
    """
    gates = ctx.deps.options.feature_gates
    if ctx.parsed is None:
        problems = list(ctx.problems)
    else:
        problems = validate_raycluster(ctx.parsed, gates=gates.by_name())
    problems += [raycluster_spec_problem(p) for p in raycluster_gate_problems(ctx.cached, gates)]
    if not problems and ctx.parsed is not None and (missing := cert_manager_missing(ctx)):
        problems = [raycluster_spec_problem(missing)]
    if problems:
        reason = problems[0].reason
        message = "; ".join(p.message for p in problems)
        event = problems[0].event_message(ctx.namespace, ctx.name)
        if len(problems) > 1:
            event = "; ".join([event, *(p.message for p in problems[1:])])
        ctx.event("Warning", reason, event, action=ev.ACTION_VALIDATE)
        if not await write_status_reason(ctx, f"{reason}: {message}"):
            return Stop.discarding_status(
                Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE)
            )
        return Stop.discarding_status()
    if ctx.parsed is not None and (warning := autoscaler_v1_warning(ctx.parsed)):
        note = f"RayCluster spec warning {ctx.namespace}/{ctx.name}: {warning}"
        ctx.event("Warning", ev.INVALID_RAYCLUSTER_SPEC, note, action=ev.ACTION_VALIDATE)
    raw_status = ctx.cached.get("status")
    if raw_status:
        try:
            status_problems = validate_raycluster_status(
                RayClusterStatus.model_validate(raw_status)
            )
        except ValueError as err:
            status_problems = [Problem(Reason.INVALID_RAYCLUSTER_STATUS, str(err))]
        if status_problems:
            problem = status_problems[0]
            event = problem.event_message(ctx.namespace, ctx.name)
            ctx.event("Warning", problem.reason, event, action=ev.ACTION_VALIDATE)
            raise InvalidStatusError(problem.message)
    return None


async def stop_if_deleting(ctx: PassContext) -> Stop | None:
    """Ends the pass for a RayCluster being deleted (garbage collection removes the rest); its
    background pod creators are stopped first."""
    if cs.meta(ctx.cached).get("deletionTimestamp"):
        if ctx.deps.group_creates is not None:
            await ctx.deps.group_creates.stop(ctx.namespace, ctx.name)
        return Stop.discarding_status()
    return None


# -- dependent objects --------------------------------------------------------------------------


async def _create(
    ctx: PassContext,
    resource: Resource,
    obj: dict[str, Any],
    *,
    created_reason: str,
    failed_reason: str,
    unless_cached: bool = True,
) -> None:
    """Creates ``obj`` with a Normal event, or a Warning event and the error; AlreadyExists
    counts as done (silently). With ``unless_cached``, nothing happens when the (lazily
    started) cache of ``resource`` already holds an object of that name."""
    name = cs.name(obj)
    cache = ctx.deps.informers.informer(resource) if unless_cached else None
    if cache is not None and cache.get(ctx.namespace, name) is not None:
        return
    where = f"{resource.kind} {ctx.namespace}/{name}"
    await create_with_events(
        ctx,
        ctx.deps.client.create(resource, obj, namespace=ctx.namespace),
        action=ev.ACTION_CREATE,
        done=(created_reason, f"Created {where}"),
        failed=(failed_reason, f"Failed to create {where}: "),
    )


async def reconcile_autoscaler_rbac(ctx: PassContext) -> Stop | None:
    """Creates the autoscaler ServiceAccount, Role and RoleBinding (enableInTreeAutoscaling).

    Raises:
        NotFound: the head template names a ServiceAccount that does not exist.
    """
    rc = ctx.rc
    if not rc.spec.enable_in_tree_autoscaling:
        return None
    sa_name = names.autoscaler_service_account_name(rc)
    if rbac.user_provided_service_account(rc):
        if ctx.deps.informers.informer(SERVICE_ACCOUNTS).get(ctx.namespace, sa_name) is None:
            try:
                await ctx.deps.client.get(SERVICE_ACCOUNTS, sa_name, namespace=ctx.namespace)
            except NotFound:
                ctx.event(
                    "Warning",
                    ev.AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
                    f"ServiceAccount {ctx.namespace}/{sa_name} named by the head Pod template was not found",
                    action=ev.ACTION_CREATE,
                )
                raise
    else:
        await _create(
            ctx, SERVICE_ACCOUNTS, rbac.build_autoscaler_service_account(rc),
            created_reason=ev.CREATED_SERVICE_ACCOUNT, failed_reason=ev.FAILED_TO_CREATE_SERVICE_ACCOUNT,
        )  # fmt: skip
    await _create(
        ctx, ROLES, rbac.build_autoscaler_role(rc),
        created_reason=ev.CREATED_ROLE, failed_reason=ev.FAILED_TO_CREATE_ROLE,
    )  # fmt: skip
    await _create(
        ctx, ROLE_BINDINGS, rbac.build_autoscaler_role_binding(rc),
        created_reason=ev.CREATED_ROLE_BINDING, failed_reason=ev.FAILED_TO_CREATE_ROLE_BINDING,
    )  # fmt: skip
    return None


def build_auth_secret(ctx: PassContext) -> dict[str, Any]:
    """Returns the Ray auth token Secret: key ``auth_token``, base64 of 32 random bytes."""
    token = base64.b64encode(secrets.token_bytes(32)).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": names.auth_secret_name(ctx.rc),
            "namespace": ctx.namespace,
            "labels": {
                keys.RAY_CLUSTER: ctx.name,
                keys.APP_CREATED_BY: labels.CREATED_BY_VALUE,
            },
            "ownerReferences": [owner_reference(ctx.rc)],
        },
        "data": {"auth_token": base64.b64encode(token.encode()).decode()},
    }


async def reconcile_auth_secret(ctx: PassContext) -> Stop | None:
    """Creates the auth token Secret (``authOptions.mode: token``, no secretName, no K8s auth)."""
    auth = ctx.rc.spec.auth_options
    if not cs.is_auth_enabled(ctx.rc) or cs.is_k8s_token_auth(ctx.rc):
        return None
    if auth is None or auth.secret_name:
        return None
    await _create(
        ctx, SECRETS, build_auth_secret(ctx),
        created_reason=ev.CREATED_SECRET, failed_reason=ev.FAILED_TO_CREATE_SECRET,
    )  # fmt: skip
    return None


async def _create_service(ctx: PassContext, service: dict[str, Any]) -> None:
    await _create(
        ctx, SERVICES, service,
        created_reason=ev.CREATED_SERVICE, failed_reason=ev.FAILED_TO_CREATE_SERVICE, unless_cached=False,
    )  # fmt: skip


async def reconcile_head_service(ctx: PassContext) -> Stop | None:
    """Creates the head service when the cache holds none for the cluster.

    Raises:
        RuntimeError: several head services exist.
    """
    selector = labels.head_service_list_selector(ctx.name)
    found = ctx.deps.services.list(ctx.namespace, label_selector=selector)
    if len(found) > 1:
        raise RuntimeError(
            f"found {len(found)} head services for RayCluster {ctx.namespace}/{ctx.name}"
        )
    if not found:
        await _create_service(ctx, services.build_head_service(ctx.rc, options=ctx.deps.options))
    return None


async def reconcile_headless_worker_service(ctx: PassContext) -> Stop | None:
    """Creates ``<cluster>-headless`` when some worker group has ``numOfHosts > 1``."""
    rc = ctx.rc
    if services.wants_headless_worker_service(rc):
        name = names.headless_worker_service_name(rc)
        if ctx.deps.services.get(ctx.namespace, name) is None:
            await _create_service(ctx, services.build_headless_worker_service(rc))
    return None


async def reconcile_serve_service(ctx: PassContext) -> Stop | None:
    """Creates ``<cluster>-serve-svc`` when annotated ``ray.io/enable-serve-service=true``."""
    rc = ctx.rc
    name = names.serve_service_name(ctx.name)
    if services.wants_serve_service(rc) and ctx.deps.services.get(ctx.namespace, name) is None:
        await _create_service(ctx, services.build_serve_service(rc))
    return None
