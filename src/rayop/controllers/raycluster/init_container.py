"""The ``wait-gcs-ready`` init container KubeRay adds to worker pods.

It loops ``ray health-check`` against the head's GCS every 5 s (quietly for the first 120 s),
copies the Ray container's env and volume mounts (for TLS settings) and asks for fixed, small
resources so that ResourceQuotas and GPU-less init rules are satisfied.
"""

from __future__ import annotations

import copy
from typing import Any

from rayop.apimachinery.objects import ObjView as Obj
from rayop.controllers.config.options import OperatorOptions
from rayop.controllers.raycluster.command import container_command

WAIT_GCS_READY = "wait-gcs-ready"
_RESOURCES = {"cpu": "200m", "memory": "256Mi"}
_FAQ = "https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html"


def wait_gcs_ready_script(fqdn: str, port: str) -> str:
    """Returns the init container's shell script, byte for byte as KubeRay renders it."""
    address = f"{fqdn}:{port}"
    lines = [
        (5, "SECONDS=0"),
        (5, "while true; do"),
        (6, "if (( SECONDS <= 120 )); then"),
        (7, f"if ray health-check --address {address} > /dev/null 2>&1; then"),
        (8, 'echo "GCS is ready."'),
        (8, "break"),
        (7, "fi"),
        (7, 'echo "$SECONDS seconds elapsed: Waiting for GCS to be ready."'),
        (6, "else"),
        (7, f"if ray health-check --address {address}; then"),
        (8, 'echo "GCS is ready. Any error messages above can be safely ignored."'),
        (8, "break"),
        (7, "fi"),
        (
            7,
            'echo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. '
            f'For troubleshooting, refer to the FAQ at {_FAQ}."',
        ),
        (6, "fi"),
        (6, "sleep 5"),
        (5, "done"),
    ]
    return "\n" + "".join("\t" * depth + text + "\n" for depth, text in lines) + "\t" * 4


def build_wait_gcs_ready(
    ray_container: Obj, fqdn: str, port: str, *, options: OperatorOptions
) -> dict[str, Any]:
    """Returns the ``wait-gcs-ready`` init container for a worker whose Ray container is given."""
    container: dict[str, Any] = {
        "name": WAIT_GCS_READY,
        "image": ray_container.get("image", ""),
        "command": container_command(login_shell=options.enable_login_shell),
        "args": [wait_gcs_ready_script(fqdn, port)],
        "resources": {"limits": dict(_RESOURCES), "requests": dict(_RESOURCES)},
    }
    if ray_container.get("imagePullPolicy"):
        container["imagePullPolicy"] = ray_container["imagePullPolicy"]
    if ray_container.get("securityContext") is not None:
        container["securityContext"] = copy.deepcopy(ray_container["securityContext"])
    if ray_container.get("env"):
        container["env"] = copy.deepcopy(ray_container["env"])
    if ray_container.get("volumeMounts"):
        container["volumeMounts"] = copy.deepcopy(ray_container["volumeMounts"])
    return container
