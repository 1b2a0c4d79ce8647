"""The Ray autoscaler sidecar KubeRay adds to the head pod when in-tree autoscaling is on."""

from __future__ import annotations

import copy
from typing import Any

from rayop.api.raycluster import RayCluster
from rayop.controllers.raycluster.command import container_command
from rayop.controllers.raycluster.env import field_ref_env

AUTOSCALER_CONTAINER_NAME = "autoscaler"
AUTOSCALER_START_COMMAND = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
    "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
_DEFAULT_RESOURCES = {"cpu": "500m", "memory": "512Mi"}


def build_autoscaler_container(image: str, *, login_shell: bool) -> dict[str, Any]:
    """Returns the ``autoscaler`` sidecar with KubeRay's defaults, before any override.

    Auth env vars are not added here; :mod:`pods` adds them before merging ``autoscalerOptions``
    with :func:`apply_autoscaler_overrides`, as KubeRay does.
    """
    return {
        "name": AUTOSCALER_CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            field_ref_env("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"),
            field_ref_env("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
            field_ref_env("RAY_HEAD_POD_NAME", "metadata.name"),
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
            {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": AUTOSCALER_START_COMMAND},
        ],
        "command": container_command(login_shell=login_shell),
        "args": [AUTOSCALER_START_COMMAND],
        "resources": {
            "limits": dict(_DEFAULT_RESOURCES),
            "requests": dict(_DEFAULT_RESOURCES),
        },
    }


def apply_autoscaler_overrides(container: dict[str, Any], rc: RayCluster) -> None:
    """Merges ``spec.autoscalerOptions`` into the sidecar (mutates ``container``)."""
    options = rc.spec.autoscaler_options
    if options is None:
        return
    replaced: dict[str, Any] = {
        "resources": options.resources,
        "image": options.image,
        "imagePullPolicy": options.image_pull_policy,
        "securityContext": options.security_context,
    }
    for key, value in replaced.items():
        if value is not None:
            container[key] = copy.deepcopy(value)
    appended = {
        "env": options.env,
        "envFrom": options.env_from,
        "volumeMounts": options.volume_mounts,
    }
    for key, items in appended.items():
        if items:
            container.setdefault(key, []).extend(copy.deepcopy(items))
    for key, words in (("command", options.command), ("args", options.args)):
        if words:
            container[key] = list(words)
