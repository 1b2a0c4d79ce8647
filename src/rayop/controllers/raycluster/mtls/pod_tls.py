"""The TLS settings KubeRay v1.7.0 adds to Ray pods when mTLS is on (``configureTLS``).

A head or worker pod gets the volume ``ray-tls`` from its node type's Secret
(``ray-head-secret-<cluster>`` or ``ray-worker-secret-<cluster>``); the Ray container, the
``wait-gcs-ready`` init container and the head's autoscaler sidecar get ``RAY_USE_TLS=1``,
``RAY_TLS_SERVER_CERT``, ``RAY_TLS_SERVER_KEY`` and ``RAY_TLS_CA_CERT`` (files under
``/etc/ray/tls``) and a read-only mount of it; and the init container ``wait-for-tls-ip-san``
is put first, waiting (with ``openssl``) until the mounted certificate lists the pod's IP. Each
step is skipped when what it adds is already there, as KubeRay does.
"""

from __future__ import annotations

from typing import Any, Final

from rayop.controllers.raycluster.mtls import names

__all__ = ["WAIT_SCRIPT", "configure_pod_tls", "set_container_tls"]

_CERT: Final = f"{names.TLS_MOUNT_PATH}/tls.crt"

WAIT_SCRIPT: Final = f"""CERT="{_CERT}"
if [ -z "${{POD_IP}}" ]; then
  POD_IP=$(hostname -i 2>/dev/null | awk '{{print $1}}')
fi
if ! command -v openssl >/dev/null 2>&1; then
  echo "openssl not found; cannot verify IP SAN" >&2
  exit 1
fi
echo "Waiting for TLS cert to include IP SAN for ${{POD_IP}}..."
while true; do
  if openssl x509 -in "${{CERT}}" -noout -text 2>/dev/null | grep -qE "IP Address:${{POD_IP}}([^0-9.]|$)"; then
    echo "TLS cert now includes IP SAN for ${{POD_IP}}"
    exit 0
  fi
  echo "IP SAN for ${{POD_IP}} not yet in cert, retrying in 5s..."
  sleep 5
done"""
"""The script of ``wait-for-tls-ip-san`` (KubeRay's, byte for byte: it is the pod's content)."""

_SMALL: Final = {"cpu": "50m", "memory": "64Mi"}


def _mount() -> dict[str, Any]:
    return {"name": names.TLS_VOLUME, "mountPath": names.TLS_MOUNT_PATH, "readOnly": True}


def set_container_tls(container: dict[str, Any]) -> None:
    """Adds the four TLS env vars and the ``ray-tls`` mount to a container, unless present."""
    env = container.setdefault("env", [])
    present = {e.get("name") for e in env}
    values = ("1", _CERT, f"{names.TLS_MOUNT_PATH}/tls.key", f"{names.TLS_MOUNT_PATH}/ca.crt")
    for name, value in zip(names.TLS_ENV_NAMES, values, strict=True):
        if name not in present:
            env.append({"name": name, "value": value})
    mounts = container.setdefault("volumeMounts", [])
    if not any(
        m.get("name") == names.TLS_VOLUME or m.get("mountPath") == names.TLS_MOUNT_PATH
        for m in mounts
    ):
        mounts.append(_mount())


def _wait_for_ip_san(ray: dict[str, Any]) -> dict[str, Any]:
    init: dict[str, Any] = {"name": names.WAIT_FOR_TLS_IP_SAN}
    if ray.get("image"):
        init["image"] = ray["image"]
    if ray.get("imagePullPolicy"):
        init["imagePullPolicy"] = ray["imagePullPolicy"]
    init["command"] = ["sh", "-c"]
    init["args"] = [WAIT_SCRIPT]
    if ray.get("securityContext") is not None:
        init["securityContext"] = dict(ray["securityContext"])
    init["env"] = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    init["volumeMounts"] = [_mount()]
    init["resources"] = {"limits": dict(_SMALL), "requests": dict(_SMALL)}
    return init


def configure_pod_tls(spec: dict[str, Any], *, cluster: str, node_type: str) -> None:
    """Adds the TLS volume, env, mounts and the IP-SAN wait to a pod spec (the first container
    is Ray's).

    Args:
        spec: The pod spec being built (changed in place).
        cluster: The RayCluster's name.
        node_type: ``"head"`` or ``"worker"`` (which Secret is mounted).
    """
    volumes = spec.setdefault("volumes", [])
    if not any(v.get("name") == names.TLS_VOLUME for v in volumes):
        secret = names.secret_name(cluster, node_type)
        volumes.append({"name": names.TLS_VOLUME, "secret": {"secretName": secret}})
    ray = spec["containers"][0]
    set_container_tls(ray)
    inits = spec.setdefault("initContainers", [])
    for init in inits:
        if init.get("name") == "wait-gcs-ready":
            set_container_tls(init)
    if any(i.get("name") == names.WAIT_FOR_TLS_IP_SAN for i in inits):
        return
    inits.insert(0, _wait_for_ip_san(ray))
