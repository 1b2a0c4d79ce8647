"""The gate steps and dependent-object steps of a RayCluster reconcile (kuberay-v1.md §3.1).

Gate steps return a :class:`Result` to end the pass early (managedBy, validation, deletion) or
None to go on. Dependent steps create what the cluster needs besides pods (autoscaler RBAC,
ingress, auth secret, services) when it is absent from the cache; they never update or delete
(except nothing: KubeRay never updates a Service). A create that answers AlreadyExists counts as
done: the cache only lagged. Each step is idempotent.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from typing import Any

from rayop.api import keys
from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.raycluster import RayClusterStatus
from rayop.api.validation import validate_raycluster, validate_raycluster_status
from rayop.controllers.common import cluster_spec as cs
from rayop.controllers.common import labels, names, settings
from rayop.controllers.common.gate_checks import raycluster_gate_problems
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster import rbac, services
from rayop.controllers.raycluster.pods import owner_reference
from rayop.controllers.raycluster.reconcile_context import ReconcileContext
from rayop.controllers.raycluster.status_sync import write_status_reason
from rayop.kube.errors import AlreadyExists, NotFound
from rayop.kube.resource import Resource
from rayop.kube.resources import (
    INGRESSES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from rayop.runtime.reconcile import Result


class InvalidStatusError(Exception):
    """The RayCluster's status is contradictory; KubeRay requeues after 2 s with an error."""


# -- gate steps ---------------------------------------------------------------------------------


async def check_managed_by(ctx: ReconcileContext) -> Result | None:
    """Ends the pass when another controller manages the cluster (``spec.managedBy``)."""
    managed_by = cs.spec(ctx.cluster).get("managedBy")
    if managed_by and managed_by != MANAGED_BY_KUBERAY:
        return Result()
    return None


async def apply_defaults(ctx: ReconcileContext) -> Result | None:
    """Fills KubeRay's defaults into the working copy (nil ``rayStartParams`` become ``{}``)."""
    spec = ctx.cluster.get("spec") or {}
    head = spec.get("headGroupSpec")
    if isinstance(head, dict) and head.get("rayStartParams") is None:
        head["rayStartParams"] = {}
    for group in spec.get("workerGroupSpecs") or []:
        if isinstance(group, dict) and group.get("rayStartParams") is None:
            group["rayStartParams"] = {}
    return None


async def validate(ctx: ReconcileContext) -> Result | None:
    """Refuses a spec the controller cannot use: Warning event, ``status.reason``, no requeue.

    A spec that uses a feature whose gate is off (``ctx.deps.options.feature_gates``) is
    refused the same way.

    Raises:
        InvalidStatusError: the status is contradictory (requeued with backoff).
        Conflict: the status write lost a race.
    """
    problems = validate_raycluster(ctx.cached)
    problems += raycluster_gate_problems(ctx.cached, ctx.deps.options.feature_gates)
    if problems:
        message = "; ".join(problems)
        metadata_problem = all(p.startswith("metadata.") for p in problems)
        reason = ev.INVALID_RAYCLUSTER_METADATA if metadata_problem else ev.INVALID_RAYCLUSTER_SPEC
        ctx.event("Warning", reason, message, ev.ACTION_VALIDATE)
        if not await write_status_reason(ctx, f"{reason}: {message}"):
            return Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE)
        return Result()
    raw_status = ctx.cached.get("status")
    if raw_status:
        try:
            status_problems = validate_raycluster_status(
                RayClusterStatus.model_validate(raw_status)
            )
        except ValueError as err:
            status_problems = [str(err)]
        if status_problems:
            message = "; ".join(status_problems)
            ctx.event("Warning", ev.INVALID_RAYCLUSTER_STATUS, message, ev.ACTION_VALIDATE)
            raise InvalidStatusError(message)
    return None


async def stop_if_deleting(ctx: ReconcileContext) -> Result | None:
    """Ends the pass for a RayCluster being deleted (garbage collection removes the rest)."""
    if cs.meta(ctx.cached).get("deletionTimestamp"):
        return Result()
    return None


# -- dependent objects --------------------------------------------------------------------------


async def _create_if_absent(
    ctx: ReconcileContext,
    resource: Resource,
    name: str,
    build: Callable[[], dict[str, Any]],
    *,
    created_reason: str,
    failed_reason: str,
) -> None:
    """Creates ``name`` unless the (lazily started) cache of ``resource`` already holds it."""
    if ctx.deps.informers.informer(resource).get(ctx.namespace, name) is not None:
        return
    obj = build()
    try:
        await ctx.deps.client.create(resource, obj, namespace=ctx.namespace)
    except AlreadyExists:
        return
    except Exception as err:
        ctx.event(
            "Warning",
            failed_reason,
            f"Failed to create {resource.kind} {ctx.namespace}/{name}: {err}",
            ev.ACTION_CREATE,
        )
        raise
    ctx.event(
        "Normal",
        created_reason,
        f"Created {resource.kind} {ctx.namespace}/{name}",
        ev.ACTION_CREATE,
    )


async def reconcile_autoscaler_rbac(ctx: ReconcileContext) -> None:
    """Creates the autoscaler ServiceAccount, Role and RoleBinding (enableInTreeAutoscaling).

    Raises:
        NotFound: the head template names a ServiceAccount that does not exist.
    """
    cluster = ctx.cluster
    if not cs.is_autoscaling_enabled(cluster):
        return
    sa_name = names.autoscaler_service_account_name(cluster)
    if rbac.user_provided_service_account(cluster):
        if ctx.deps.informers.informer(SERVICE_ACCOUNTS).get(ctx.namespace, sa_name) is None:
            try:
                await ctx.deps.client.get(SERVICE_ACCOUNTS, sa_name, namespace=ctx.namespace)
            except NotFound:
                ctx.event(
                    "Warning",
                    ev.AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
                    f"ServiceAccount {ctx.namespace}/{sa_name} named by the head Pod template was not found",
                    ev.ACTION_CREATE,
                )
                raise
    else:
        await _create_if_absent(
            ctx, SERVICE_ACCOUNTS, sa_name, lambda: rbac.build_autoscaler_service_account(cluster),
            created_reason=ev.CREATED_SERVICE_ACCOUNT, failed_reason=ev.FAILED_TO_CREATE_SERVICE_ACCOUNT,
        )  # fmt: skip
    role_name = names.autoscaler_role_name(cluster)
    await _create_if_absent(
        ctx, ROLES, role_name, lambda: rbac.build_autoscaler_role(cluster),
        created_reason=ev.CREATED_ROLE, failed_reason=ev.FAILED_TO_CREATE_ROLE,
    )  # fmt: skip
    await _create_if_absent(
        ctx, ROLE_BINDINGS, role_name, lambda: rbac.build_autoscaler_role_binding(cluster),
        created_reason=ev.CREATED_ROLE_BINDING, failed_reason=ev.FAILED_TO_CREATE_ROLE_BINDING,
    )  # fmt: skip


async def reconcile_ingress(ctx: ReconcileContext) -> None:
    """Creates ``<cluster>-head-ingress`` when ``headGroupSpec.enableIngress`` (no drift repair)."""
    cluster = ctx.cluster
    if not cs.head_group(cluster).get("enableIngress"):
        return
    await _create_if_absent(
        ctx, INGRESSES, names.ingress_name(cluster), lambda: services.build_head_ingress(cluster),
        created_reason=ev.CREATED_INGRESS, failed_reason=ev.FAILED_TO_CREATE_INGRESS,
    )  # fmt: skip


def build_auth_secret(ctx: ReconcileContext) -> dict[str, Any]:
    """Returns the Ray auth token Secret: key ``auth_token``, base64 of 32 random bytes."""
    token = base64.b64encode(secrets.token_bytes(32)).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": names.auth_secret_name(ctx.cluster),
            "namespace": ctx.namespace,
            "labels": {
                keys.RAY_CLUSTER: ctx.name,
                keys.APP_CREATED_BY: labels.CREATED_BY_VALUE,
            },
            "ownerReferences": [owner_reference(ctx.cluster)],
        },
        "data": {"auth_token": base64.b64encode(token.encode()).decode()},
    }


async def reconcile_auth_secret(ctx: ReconcileContext) -> None:
    """Creates the auth token Secret (``authOptions.mode: token``, no secretName, no K8s auth)."""
    cluster = ctx.cluster
    if not cs.is_auth_enabled(cluster) or cs.is_k8s_token_auth(cluster):
        return
    if cs.auth_options(cluster).get("secretName"):
        return
    await _create_if_absent(
        ctx, SECRETS, names.auth_secret_name(cluster), lambda: build_auth_secret(ctx),
        created_reason=ev.CREATED_SECRET, failed_reason=ev.FAILED_TO_CREATE_SECRET,
    )  # fmt: skip


async def _create_service(ctx: ReconcileContext, service: dict[str, Any]) -> None:
    name = cs.name(service)
    try:
        await ctx.deps.client.create(SERVICES, service, namespace=ctx.namespace)
    except AlreadyExists:
        return
    except Exception as err:
        ctx.event(
            "Warning",
            ev.FAILED_TO_CREATE_SERVICE,
            f"Failed to create Service {ctx.namespace}/{name}: {err}",
            ev.ACTION_CREATE,
        )
        raise
    ctx.event(
        "Normal", ev.CREATED_SERVICE, f"Created Service {ctx.namespace}/{name}", ev.ACTION_CREATE
    )


async def reconcile_head_service(ctx: ReconcileContext) -> None:
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
        await _create_service(
            ctx, services.build_head_service(ctx.cluster, options=ctx.deps.options)
        )


async def reconcile_headless_worker_service(ctx: ReconcileContext) -> None:
    """Creates ``<cluster>-headless`` when some worker group has ``numOfHosts > 1``."""
    if not services.wants_headless_worker_service(ctx.cluster):
        return
    if (
        ctx.deps.services.get(ctx.namespace, names.headless_worker_service_name(ctx.cluster))
        is None
    ):
        await _create_service(ctx, services.build_headless_worker_service(ctx.cluster))


async def reconcile_serve_service(ctx: ReconcileContext) -> None:
    """Creates ``<cluster>-serve-svc`` when annotated ``ray.io/enable-serve-service=true``."""
    if not services.wants_serve_service(ctx.cluster):
        return
    if ctx.deps.services.get(ctx.namespace, names.serve_service_name(ctx.name)) is None:
        await _create_service(ctx, services.build_serve_service(ctx.cluster))
