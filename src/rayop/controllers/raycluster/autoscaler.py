"""The Ray autoscaler sidecar KubeRay adds to the head pod when in-tree autoscaling is on."""

from __future__ import annotations

import copy
from typing import Any

from rayop.controllers.common import cluster_spec as cs
from rayop.controllers.common.cluster_spec import Obj
from rayop.controllers.raycluster.command import container_command
from rayop.controllers.raycluster.env import field_ref_env

AUTOSCALER_CONTAINER_NAME = "autoscaler"
AUTOSCALER_START_COMMAND = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
    "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
_DEFAULT_RESOURCES = {"cpu": "500m", "memory": "512Mi"}


def build_autoscaler_container(cluster: Obj, image: str, *, login_shell: bool) -> dict[str, Any]:
    """Returns the ``autoscaler`` sidecar with ``autoscalerOptions`` overrides merged in.

    Auth env vars are not added here; :mod:`pods` adds them (before the overrides, as KubeRay does)
    via :func:`apply_autoscaler_overrides`.
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


def apply_autoscaler_overrides(container: dict[str, Any], cluster: Obj) -> None:
    """Merges ``spec.autoscalerOptions`` into the sidecar (mutates ``container``)."""
    options = cs.spec(cluster).get("autoscalerOptions") or {}
    for key in ("resources", "image", "imagePullPolicy", "securityContext"):
        if options.get(key) is not None:
            container[key] = copy.deepcopy(options[key])
    for key in ("env", "envFrom", "volumeMounts"):
        if options.get(key):
            container.setdefault(key, []).extend(copy.deepcopy(options[key]))
    for key in ("command", "args"):
        if options.get(key):
            container[key] = list(options[key])
