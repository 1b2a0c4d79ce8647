"""Head and worker pods exactly as KubeRay v1.7 builds them.

KubeRay v1.7.0: ``DefaultHeadPodTemplate``, ``DefaultWorkerPodTemplate`` and ``BuildPod`` in
``ray-operator/controllers/ray/common/pod.go``.

:func:`build_head_pod` and :func:`build_worker_pod` are pure: they read the parsed
:class:`~rayop.api.raycluster.RayCluster`, deep-copy the group's template (a plain dict in the
model) and return a new Pod dict ready for ``create``. Names are ``generateName`` prefixes
except for a deterministic head name.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.api import keys
from rayop.api.raycluster import AutoscalerVersion, HeadGroupSpec, RayCluster, WorkerGroupSpec
from rayop.controllers.config.options import KUBERAY_VERSION, OperatorOptions
from rayop.controllers.config.pod_defaults import (
    add_default_envs,
    add_default_metadata,
    add_sidecars,
)
from rayop.controllers.kit import cluster_access as cs
from rayop.controllers.kit import labels, names
from rayop.controllers.raycluster import command, env, history_server, probes
from rayop.controllers.raycluster.autoscaler import (
    apply_autoscaler_overrides,
    build_autoscaler_container,
)
from rayop.controllers.raycluster.init_container import build_wait_gcs_ready
from rayop.controllers.raycluster.mtls.names import is_tls_enabled
from rayop.controllers.raycluster.mtls.pod_tls import configure_pod_tls, set_container_tls
from rayop.controllers.raycluster.resources import memory_size_limit

SHARED_MEMORY_VOLUME = "shared-mem"
SHARED_MEMORY_PATH = "/dev/shm"
RAY_LOG_VOLUME = "ray-logs"
RAY_LOG_PATH = "/tmp/ray"
METRICS_PORT_NAME = "metrics"
Pod = dict[str, Any]


def owner_reference(rc: RayCluster) -> dict[str, Any]:
    """Returns the controller ownerReference pointing at the RayCluster."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": rc.name,
        "uid": rc.metadata.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _template(group: HeadGroupSpec | WorkerGroupSpec, rc: RayCluster) -> Pod:
    template = copy.deepcopy(dict(group.template))
    metadata = template.setdefault("metadata", {})
    metadata["namespace"] = cs.cluster_namespace(rc)
    annotations = metadata.setdefault("annotations", {})
    if (cs.annotation(rc, keys.OVERWRITE_CONTAINER_CMD) or "").lower() == "true":
        annotations[keys.OVERWRITE_CONTAINER_CMD] = "true"
    spec = template.setdefault("spec", {})
    if not spec.get("containers"):
        spec["containers"] = [{}]
    return template


def _merged_user_labels(group: HeadGroupSpec | WorkerGroupSpec) -> dict[str, str]:
    merged = dict((group.template.get("metadata") or {}).get("labels") or {})
    merged.update(group.labels or {})
    return merged


def _ensure_metrics_port(container: dict[str, Any]) -> None:
    ports = container.setdefault("ports", [])
    if not any(p.get("name") == METRICS_PORT_NAME for p in ports):
        ports.append({"name": METRICS_PORT_NAME, "containerPort": command.DEFAULT_METRICS_PORT})


def _add_empty_dir(
    pod: Pod, container: dict[str, Any], volume: str, path: str, *, memory: bool
) -> None:
    mounts = container.setdefault("volumeMounts", [])
    if any(m.get("mountPath") == path for m in mounts):
        return
    volumes = pod["spec"].setdefault("volumes", [])
    if not any(v.get("name") == volume for v in volumes):
        empty_dir: dict[str, Any] = {}
        if memory:
            empty_dir["medium"] = "Memory"
            size = memory_size_limit(container)
            if size is not None:
                empty_dir["sizeLimit"] = size
        volumes.append({"name": volume, "emptyDir": empty_dir})
    mounts.append({"name": volume, "mountPath": path})


def _finish_pod(
    rc: RayCluster,
    template: Pod,
    *,
    node_type: str,
    params: dict[str, str],
    fqdn: str,
    options: OperatorOptions,
) -> Pod:
    """Applies KubeRay's ``BuildPod`` steps to a prepared template and returns the Pod."""
    creator = cs.creator_crd(rc)
    metadata = template["metadata"]
    if creator == "RayService":
        metadata["labels"][keys.RAY_SERVE] = "false" if node_type == "head" else "true"
    pod: Pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}
    containers = pod["spec"]["containers"]
    ray = containers[0]
    if "plasma-directory" not in params:
        _add_empty_dir(pod, ray, SHARED_MEMORY_VOLUME, SHARED_MEMORY_PATH, memory=True)
    if node_type == "head" and rc.spec.enable_in_tree_autoscaling:
        sidecar = next(c for c in containers if c.get("name") == "autoscaler")
        _add_empty_dir(pod, ray, RAY_LOG_VOLUME, RAY_LOG_PATH, memory=False)
        _add_empty_dir(pod, sidecar, RAY_LOG_VOLUME, RAY_LOG_PATH, memory=False)
    collector = history_server.collector_index(pod["spec"], options.feature_gates)
    if collector is not None:
        _add_empty_dir(pod, ray, RAY_LOG_VOLUME, RAY_LOG_PATH, memory=False)
        _add_empty_dir(pod, containers[collector], RAY_LOG_VOLUME, RAY_LOG_PATH, memory=False)
    ray_start = command.ray_start_command(node_type, params, ray)
    overwrite = metadata["annotations"].get(keys.OVERWRITE_CONTAINER_CMD, "").lower() == "true"
    args = command.container_args(ray, ray_start, overwrite=overwrite)
    if args is not None:
        ray["command"] = command.container_command(login_shell=options.enable_login_shell)
        ray["args"] = args
    for init in pod["spec"].get("initContainers") or []:
        env.add_init_container_env(init, fqdn)
    add_default_envs(ray, options.pod_defaults)
    env.add_ray_container_env(
        ray,
        node_type=node_type,
        fqdn=fqdn,
        head_port=cs.head_port(rc),
        ray_start_cmd=ray_start,
        creator_crd=creator,
    )
    if collector is not None:
        history_server.add_ray_event_env(ray)
    if options.enable_probes_injection:
        probes.add_probes(
            ray,
            node_type=node_type,
            creator_crd=creator,
            params=params,
            ray_version=rc.spec.ray_version,
        )
    metadata["ownerReferences"] = [owner_reference(rc)]
    if not metadata.get("annotations"):
        metadata.pop("annotations", None)
    return pod


def _add_auth(rc: RayCluster, template: Pod) -> None:
    if not cs.is_auth_enabled(rc):
        return
    spec = template["spec"]
    env.add_auth_env(rc, spec["containers"][0])
    if cs.is_k8s_token_auth(rc):
        env.add_ray_token_volume(spec)
    for init in spec.get("initContainers") or []:
        if init.get("name") == "wait-gcs-ready":
            env.add_auth_env(rc, init)


def build_head_pod(rc: RayCluster, *, options: OperatorOptions, spec_hash: str) -> Pod:
    """Returns the head Pod KubeRay would create for the RayCluster ``rc``.

    Args:
        rc: the RayCluster.
        options: operator settings (deterministic name, probes, login shell, cluster domain).
        spec_hash: the value for ``ray.io/upgrade-strategy-recreate-hash``: the hash of the
            wire spec (:func:`~rayop.controllers.raycluster.spec_hash.spec_hash`).
    """
    group = rc.spec.head_group_spec
    cluster_name = rc.name
    fqdn = names.head_service_fqdn(rc, cluster_domain=options.cluster_domain)
    template = _template(group, rc)
    metadata = template["metadata"]
    pod_name = names.head_pod_name(rc, deterministic=options.enable_deterministic_head_pod_name)
    metadata.pop("generateName" if options.enable_deterministic_head_pod_name else "name", None)
    metadata["name" if options.enable_deterministic_head_pod_name else "generateName"] = pod_name
    params = command.ray_start_params(rc, group, node_type="head", fqdn=fqdn)
    metadata["labels"] = labels.pod_labels(
        cluster_name, labels.HEAD, names.HEAD_GROUP_LABEL_VALUE, _merged_user_labels(group)
    )
    spec = template["spec"]
    ray = spec["containers"][0]
    if rc.spec.enable_in_tree_autoscaling:
        spec["serviceAccountName"] = names.autoscaler_service_account_name(rc)
        sidecar = build_autoscaler_container(
            str(ray.get("image", "")), login_shell=options.enable_login_shell
        )
        if cs.is_auth_enabled(rc):
            env.add_auth_env(rc, sidecar)
        if is_tls_enabled(rc, options.feature_gates):
            set_container_tls(sidecar)
        apply_autoscaler_overrides(sidecar, rc)
        spec["containers"].append(sidecar)
        version = cs.autoscaler_version(rc)
        if version == AutoscalerVersion.V2:
            env.append_env(ray, "RAY_enable_autoscaler_v2", "true")
            spec["restartPolicy"] = "Never"
        elif version == AutoscalerVersion.V1:
            env.append_env(ray, "RAY_enable_autoscaler_v2", "false")
    env.add_gcs_ft_env(rc, "head", ray, template, params)
    _ensure_metrics_port(ray)
    _add_auth(rc, template)
    if is_tls_enabled(rc, options.feature_gates):
        configure_pod_tls(spec, cluster=cluster_name, node_type="head")
    history_server.add_collector(rc, spec, node_type="head", fqdn=fqdn, gates=options.feature_gates)
    add_sidecars(spec, options.pod_defaults, node_type="head")
    add_default_metadata(metadata, options.pod_defaults)
    pod = _finish_pod(rc, template, node_type="head", params=params, fqdn=fqdn, options=options)
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations[keys.UPGRADE_STRATEGY_RECREATE_HASH] = spec_hash
    annotations[keys.KUBERAY_VERSION] = KUBERAY_VERSION
    return pod


def build_worker_pod(
    rc: RayCluster,
    group: WorkerGroupSpec,
    *,
    options: OperatorOptions,
    replica_index: int = 0,
    replica_name: str = "",
    host_index: int = 0,
) -> Pod:
    """Returns one worker Pod of ``group`` as KubeRay would create it.

    Args:
        rc: the RayCluster.
        group: one entry of ``spec.workerGroupSpecs``.
        options: operator settings (init container, probes, gates, cluster domain).
        replica_index: ``ray.io/worker-group-replica-index`` (multi-host indexing gate).
        replica_name: ``ray.io/worker-group-replica-name`` for ``numOfHosts > 1``.
        host_index: ``ray.io/replica-host-index`` for ``numOfHosts > 1``.
    """
    cluster_name = rc.name
    group_name = group.group_name
    fqdn = names.head_service_fqdn(rc, cluster_domain=options.cluster_domain)
    template = _template(group, rc)
    metadata = template["metadata"]
    metadata.pop("name", None)
    metadata["generateName"] = names.worker_pod_generate_name(rc, group_name)
    spec = template["spec"]
    ray = spec["containers"][0]
    if options.enable_init_container_injection:
        init = build_wait_gcs_ready(ray, fqdn, cs.head_port(rc), options=options)
        spec.setdefault("initContainers", []).append(init)
    params = command.ray_start_params(rc, group, node_type="worker", fqdn=fqdn)
    pod_labels = labels.pod_labels(
        cluster_name, labels.WORKER, group_name, _merged_user_labels(group)
    )
    if options.feature_gates.ray_multi_host_indexing:
        pod_labels[keys.RAY_WORKER_REPLICA_INDEX] = str(replica_index)
        if group.num_of_hosts > 1:
            pod_labels[keys.RAY_WORKER_REPLICA_NAME] = replica_name
            pod_labels[keys.RAY_REPLICA_HOST_INDEX] = str(host_index)
    metadata["labels"] = pod_labels
    env.add_gcs_ft_env(rc, "worker", ray, template, params)
    _ensure_metrics_port(ray)
    if cs.is_autoscaling_v2(rc):
        spec["restartPolicy"] = "Never"
    _add_auth(rc, template)
    if is_tls_enabled(rc, options.feature_gates):
        configure_pod_tls(spec, cluster=cluster_name, node_type="worker")
    history_server.add_collector(
        rc, spec, node_type="worker", fqdn=fqdn, gates=options.feature_gates
    )
    add_sidecars(spec, options.pod_defaults, node_type="worker")
    add_default_metadata(metadata, options.pod_defaults)
    return _finish_pod(rc, template, node_type="worker", params=params, fqdn=fqdn, options=options)


def with_replica_index(pod: Pod, replica_index: int) -> Pod:
    """Returns a worker pod of :func:`build_worker_pod` as it would be built with
    ``replica_index`` (the index is only its ``ray.io/worker-group-replica-index`` label, set
    with the ``RayMultiHostIndexing`` gate on); never blocks.

    The result has a top level, metadata and labels of its own and shares the rest with ``pod``:
    both are for reading (a create sends them) and neither may be edited.
    """
    labels_ = pod["metadata"].get("labels") or {}
    if keys.RAY_WORKER_REPLICA_INDEX not in labels_:
        return pod
    labels_ = {**labels_, keys.RAY_WORKER_REPLICA_INDEX: str(replica_index)}
    return {**pod, "metadata": {**pod["metadata"], "labels": labels_}}
