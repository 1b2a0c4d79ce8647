"""The GCS storage step: the PVC behind the embedded RocksDB GCS fault tolerance backend.

KubeRay v1.7.0's ``reconcileGCSStoragePVC`` (gate ``GCSFaultToleranceEmbeddedStorage``, which
validation enforces before this step runs). Nothing happens unless GCS FT is on with
``gcsFaultToleranceOptions.backend: rocksdb``. Then, before any pod step:

- **User-managed** (``storage.claimName``): the operator never creates, adopts, updates or
  deletes the claim. When the cache does not hold it, KubeRay's Warning ``FailedToCreatePVC``
  (action Validate) is recorded. Beyond KubeRay, which goes on to create a head pod that stays
  Pending, rayop also writes that message to ``status.reason`` and ends the pass before the pod
  step, so a head pod never references a PVC that does not exist; the claim's creation enqueues
  the cluster again (see :func:`claim_requests`).
- **Operator-managed** (default): ``<cluster>-gcs-pvc`` (labels ``ray.io/cluster``; access modes
  ``storage.accessModes`` or ``[ReadWriteOnce]``; ``storage.size`` or 1Gi; ``storageClassName``
  only when set) is created, with a controller ownerReference to the RayCluster (so it is
  garbage-collected with it) unless ``storage.deletionPolicy: Retain`` (then none, and the PVC
  and its data outlive the cluster). Normal ``CreatedPVC``, or Warning ``FailedToCreatePVC``
  and the error (the pass stops before the pods); a create answering AlreadyExists reads the
  live PVC and treats it as found. An existing PVC of that name is adopted as it
  is, as KubeRay does (a same-named cluster recreated after a Retain delete reuses its RocksDB
  state): its size, class and access modes are never changed (a difference is a Warning
  ``FailedToCreatePVC``, action Update, naming each field), only its controller ownerReference
  follows the deletion policy (added when missing, removed under Retain; one update). A PVC that
  another object controls is refused with an error, as controller-runtime's
  ``SetControllerReference`` refuses it, and left untouched.

A PVC (either kind) that is being deleted is waited for, beyond KubeRay: while no head pod
exists the pass ends before the pod step and looks again in 2 s, so a new head pod is never
bound to a claim that is about to vanish (a user deleting the PVC for a fresh store gets a new
one once the old one is gone); a running head pod is left alone.

The grant this needs on ``persistentvolumeclaims``: list and watch (the cache), create, update,
and get (the live PVC a create raced with, when the cache has not shown it yet).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from rayop.api import keys
from rayop.api.raycluster import GcsStorageDeletionPolicy, GcsStorageOptions, RayCluster
from rayop.apimachinery.objects import ObjView as Obj
from rayop.apimachinery.quantity import Quantity
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import settings
from rayop.controllers.raycluster import events as ev
from rayop.controllers.raycluster.context import PassContext
from rayop.controllers.raycluster.pods import owner_reference
from rayop.controllers.raycluster.status_sync import write_status_reason
from rayop.kube.errors import AlreadyExists
from rayop.kube.resources import PERSISTENT_VOLUME_CLAIMS
from rayop.runtime.reconcile import Request, Result
from rayop.runtime.steps import Stop

CREATED_PVC: Final = "CreatedPVC"
"""KubeRay's event reason for a created GCS storage PVC."""
FAILED_TO_CREATE_PVC: Final = "FailedToCreatePVC"
"""KubeRay's event reason for a missing claim, a failed create and a drifted PVC."""
DEFAULT_SIZE: Final = "1Gi"
DEFAULT_ACCESS_MODES: Final = ("ReadWriteOnce",)


class AlreadyOwnedError(RuntimeError):
    """The PVC named for the cluster is controlled by another object: it is not adopted."""


def _storage(rc: RayCluster) -> GcsStorageOptions | None:
    options = rc.spec.gcs_fault_tolerance_options
    return options.storage if options is not None else None


def wants_gcs_storage(rc: RayCluster) -> bool:
    """Tells whether the cluster uses the embedded RocksDB backend (so it needs a PVC)."""
    return cs.is_gcs_ft_enabled(rc) and cs.is_gcs_ft_embedded(rc)


def retain_on_deletion(rc: RayCluster) -> bool:
    """Tells whether ``storage.deletionPolicy`` is Retain (the PVC gets no ownerReference)."""
    storage = _storage(rc)
    return storage is not None and storage.deletion_policy == GcsStorageDeletionPolicy.RETAIN


def build_gcs_storage_pvc(rc: RayCluster) -> dict[str, Any]:
    """Returns the operator-managed ``<cluster>-gcs-pvc`` with KubeRay's defaults, and a
    controller ownerReference unless the deletion policy is Retain."""
    storage = _storage(rc)
    access_modes = list((storage.access_modes if storage else None) or DEFAULT_ACCESS_MODES)
    size = storage.size if storage is not None and storage.size is not None else DEFAULT_SIZE
    spec: dict[str, Any] = {
        "accessModes": access_modes,
        "resources": {"requests": {"storage": Quantity.parse(size).canonical()}},
    }
    if storage is not None and storage.storage_class_name is not None:
        spec["storageClassName"] = storage.storage_class_name
    metadata: dict[str, Any] = {
        "name": cs.gcs_storage_pvc_name(rc),
        "namespace": cs.cluster_namespace(rc),
        "labels": {keys.RAY_CLUSTER: rc.name},
    }
    if not retain_on_deletion(rc):
        metadata["ownerReferences"] = [owner_reference(rc)]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
    }


def _size(pvc: Mapping[str, Any]) -> Quantity | None:
    raw = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
    try:
        return Quantity.parse(raw) if raw is not None else None
    except ValueError:
        return None


def pvc_drift(desired: Mapping[str, Any], existing: Mapping[str, Any]) -> str:
    """Describes how a live PVC differs from the desired one on the fields Kubernetes cannot
    change in place (size, an explicitly asked for class, access modes); "" when none do."""
    diffs = []
    want, got = _size(desired), _size(existing)
    if (want.value if want else None) != (got.value if got else None):
        diffs.append(f"requested size {want or ''} != current {got or ''}")
    want_spec, got_spec = desired.get("spec") or {}, existing.get("spec") or {}
    want_class = want_spec.get("storageClassName")
    got_class = got_spec.get("storageClassName")
    if want_class is not None and want_class != got_class:
        diffs.append(f"storageClassName {want_class} != current {got_class or '<default>'}")
    want_modes, got_modes = want_spec.get("accessModes") or [], got_spec.get("accessModes") or []
    if sorted(want_modes) != sorted(got_modes):
        diffs.append(f"accessModes [{' '.join(want_modes)}] != current [{' '.join(got_modes)}]")
    return "; ".join(diffs)


def owner_update(rc: RayCluster, uid: str, pvc: Mapping[str, Any]) -> dict[str, Any] | None:
    """Returns ``pvc`` with its controller ownerReference made to follow the deletion policy, or
    None when it already does.

    Raises:
        AlreadyOwnedError: another object controls the PVC (it is never adopted).
    """
    refs: list[dict[str, Any]] = list(cs.meta(pvc).get("ownerReferences") or [])
    ours = [r for r in refs if r.get("uid") == uid]
    controlled = any(r.get("controller") is True for r in ours)
    if retain_on_deletion(rc):
        if not controlled:
            return None
        kept = [r for r in refs if r.get("uid") != uid]
    else:
        if controlled:
            return None
        other = next((r for r in refs if r.get("controller") is True), None)
        if other is not None:
            raise AlreadyOwnedError(
                f"Object {cs.namespace(pvc)}/{cs.name(pvc)} is already owned by another "
                f"{other.get('kind', '')} controller {other.get('name', '')}"
            )
        kept = [r for r in refs if r.get("uid") != uid] + [owner_reference(rc)]
    updated = copy.deepcopy(dict(pvc))
    updated["metadata"]["ownerReferences"] = kept
    updated.setdefault("apiVersion", "v1")
    updated.setdefault("kind", "PersistentVolumeClaim")
    return updated


async def reconcile_gcs_storage_pvc(ctx: PassContext) -> Stop | None:
    """Makes sure the embedded GCS store's PVC exists before any pod (see the module docstring).

    Returns a Stop (before the pod step, the reason written) when a ``claimName`` is missing.

    Raises:
        AlreadyOwnedError: the operator-managed name is controlled by another object.
        ApiError: the create or the ownerReference update failed.
    """
    rc = ctx.rc
    if not wants_gcs_storage(rc):
        return None
    name = cs.gcs_storage_pvc_name(rc)
    existing = ctx.deps.informers.informer(PERSISTENT_VOLUME_CLAIMS).get(ctx.namespace, name)
    if existing is not None and cs.meta(existing).get("deletionTimestamp"):
        return _wait_for_deletion(ctx)
    storage = _storage(rc)
    if storage is not None and storage.claim_name:
        return None if existing is not None else await _missing_claim(ctx, name)
    desired = build_gcs_storage_pvc(rc)
    if existing is None:
        existing = await _create(ctx, desired)
        if existing is None:
            return None
    drift = pvc_drift(desired, existing)
    if drift:
        ctx.event(
            "Warning",
            FAILED_TO_CREATE_PVC,
            f"GCS storage PVC {ctx.namespace}/{name} already exists and cannot be reconfigured in "
            f"place ({drift}); delete the PVC to recreate it with the new settings",
            action=ev.ACTION_UPDATE,
        )
    updated = owner_update(rc, ctx.uid, existing)
    if updated is not None:
        await ctx.deps.client.update(PERSISTENT_VOLUME_CLAIMS, updated)
    return None


def _wait_for_deletion(ctx: PassContext) -> Stop | None:
    """Holds a new head pod back while the PVC is being deleted (it would never start), or goes
    on when a head pod still uses it (the PVC goes once that pod does)."""
    if ctx.head_pods():
        return None
    return Stop.after_status_write(Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE))


async def _missing_claim(ctx: PassContext, name: str) -> Stop:
    message = (
        f'GcsFaultToleranceOptions.Storage.ClaimName "{name}" not found in namespace '
        f"{ctx.namespace}; the head Pod will not start until it exists"
    )
    ctx.event("Warning", FAILED_TO_CREATE_PVC, message, action=ev.ACTION_VALIDATE)
    if not await write_status_reason(ctx, f"{FAILED_TO_CREATE_PVC}: {message}"):
        return Stop.discarding_status(
            Result(requeue_after=settings.RAYCLUSTER_STATUS_CHANGED_REQUEUE)
        )
    periodic = float(ctx.deps.options.default_requeue_seconds)
    return Stop.discarding_status(Result(requeue_after=periodic if periodic > 0 else None))


async def _create(ctx: PassContext, pvc: dict[str, Any]) -> Obj | None:
    """Creates the PVC; returns None, or the live PVC when one of that name already existed
    (the cache lagged: it is read, and adopted or refused like a cached one, as KubeRay does)."""
    where = f"{ctx.namespace}/{cs.name(pvc)}"
    try:
        await ctx.deps.client.create(PERSISTENT_VOLUME_CLAIMS, pvc, namespace=ctx.namespace)
    except AlreadyExists:
        live: Obj = await ctx.deps.client.get(
            PERSISTENT_VOLUME_CLAIMS, cs.name(pvc), namespace=ctx.namespace
        )
        return live
    except Exception as err:
        ctx.event(
            "Warning",
            FAILED_TO_CREATE_PVC,
            f"Failed to create GCS storage PVC {where}, {err}",
            action=ev.ACTION_CREATE,
        )
        raise
    ctx.event("Normal", CREATED_PVC, f"Created GCS storage PVC {where}", action=ev.ACTION_CREATE)
    return None


def claim_requests(clusters: Iterable[Mapping[str, Any]], pvc: Mapping[str, Any]) -> list[Request]:
    """Maps a PVC to the RayClusters of its namespace naming it as ``storage.claimName``.

    Beyond KubeRay (which watches only the PVCs it owns): a cluster waiting for its user-managed
    claim goes on as soon as the claim is created.
    """
    namespace, name = cs.namespace(pvc), cs.name(pvc)
    requests = []
    for cluster in clusters:
        if cs.namespace(cluster) != namespace:
            continue
        options = cs.spec(cluster).get("gcsFaultToleranceOptions") or {}
        if (options.get("storage") or {}).get("claimName") == name:
            requests.append(Request(namespace, cs.name(cluster)))
    return requests
