"""Materializes a pod's volumes under its directory on this machine, as a kubelet mounts them.

``configMap`` and ``secret`` (all keys or ``items`` with their paths and modes), ``emptyDir``,
``downwardAPI`` (fieldRef items), ``projected`` (configMap, secret and downwardAPI sources),
``hostPath`` (the host's own path) and ``persistentVolumeClaim`` (one directory per claim,
shared by the pods that use it) are supported; any other volume type, or a missing ConfigMap or
Secret that is not optional, raises :class:`VolumeError` (the pod waits in ``ContainerCreating``
with a ``FailedMount`` event, as on a real node). :func:`container_mounts` maps each of a
container's ``volumeMounts`` (``subPath`` included) to its directory here;
:func:`read_only_mounts` names those mounted ``readOnly``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

from rayop.apimachinery.objects import Obj
from rayop.sim.nodes.processes.pod_env import EnvError, field_value

__all__ = ["VolumeError", "container_mounts", "materialize_volumes", "read_only_mounts"]

Lookup = Callable[[str, str], "Obj | None"]


class VolumeError(RuntimeError):
    """A volume cannot be mounted (its source is missing or its type is not supported)."""


def _write(root: Path, rel: str, data: bytes, mode: int | None) -> None:
    target = (root / rel).resolve()
    if not str(target).startswith(str(root.resolve())):
        raise VolumeError(f'item path "{rel}" leaves the volume')
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    if mode is not None:
        target.chmod(mode & 0o777)


def _key_data(kind: str, obj: Obj) -> dict[str, bytes]:
    if kind == "Secret":
        out = {k: base64.b64decode(str(v)) for k, v in (obj.get("data") or {}).items()}
        out.update({k: str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
        return out
    out = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
    out.update({k: base64.b64decode(str(v)) for k, v in (obj.get("binaryData") or {}).items()})
    return out


def _keys(kind: str, source: Obj, name: str, root: Path, lookup: Lookup) -> None:
    obj = lookup(kind, name)
    if obj is None:
        if source.get("optional"):
            return
        raise VolumeError(f'{kind.lower()} "{name}" not found')
    data = _key_data(kind, obj)
    default_mode = source.get("defaultMode")
    items = source.get("items")
    if items is None:
        for key, value in data.items():
            _write(root, key, value, default_mode)
        return
    for item in items:
        key = str(item.get("key") or "")
        if key not in data:
            if source.get("optional"):
                continue
            raise VolumeError(f"configmap references non-existent config key: {key}")
        _write(root, str(item.get("path") or key), data[key], item.get("mode", default_mode))


def _downward(pod: Obj, items: list[Obj], root: Path) -> None:
    for item in items:
        ref = item.get("fieldRef")
        if ref is None:
            raise VolumeError("downwardAPI resourceFieldRef items are not supported by --real-ray")
        try:
            value = field_value(pod, str(ref.get("fieldPath") or ""))
        except EnvError as exc:
            raise VolumeError(str(exc)) from exc
        _write(root, str(item.get("path") or ""), value.encode(), item.get("mode"))


def _one(pod: Obj, volume: Obj, root: Path, claims: Path, lookup: Lookup) -> Path:
    name = str(volume.get("name") or "")
    target = root / name
    if "hostPath" in volume:
        return Path(str(volume["hostPath"].get("path") or "/"))
    if "persistentVolumeClaim" in volume:
        claim = claims / str(volume["persistentVolumeClaim"].get("claimName") or name)
        claim.mkdir(parents=True, exist_ok=True)
        return claim
    target.mkdir(parents=True, exist_ok=True)
    if "emptyDir" in volume:
        return target
    if "configMap" in volume:
        source = volume["configMap"]
        _keys("ConfigMap", source, str(source.get("name") or ""), target, lookup)
    elif "secret" in volume:
        source = volume["secret"]
        _keys("Secret", source, str(source.get("secretName") or ""), target, lookup)
    elif "downwardAPI" in volume:
        _downward(pod, volume["downwardAPI"].get("items") or [], target)
    elif "projected" in volume:
        for src in volume["projected"].get("sources") or []:
            if "configMap" in src:
                _keys(
                    "ConfigMap", src["configMap"], str(src["configMap"].get("name")), target, lookup
                )
            elif "secret" in src:
                _keys("Secret", src["secret"], str(src["secret"].get("name")), target, lookup)
            elif "downwardAPI" in src:
                _downward(pod, src["downwardAPI"].get("items") or [], target)
            else:
                kinds = ", ".join(sorted(src))
                raise VolumeError(f'projected source {kinds} of volume "{name}" is not supported')
    else:
        kinds = ", ".join(sorted(k for k in volume if k != "name"))
        raise VolumeError(f'volume "{name}" of type {kinds} is not supported by --real-ray')
    return target


def materialize_volumes(pod: Obj, root: Path, claims: Path, lookup: Lookup) -> dict[str, Path]:
    """Writes every volume of the pod under ``root`` and returns volume name -> directory.

    Raises:
        VolumeError: a volume's source is missing or its type is not supported.
    """
    return {
        str(v.get("name")): _one(pod, v, root, claims, lookup)
        for v in (pod.get("spec") or {}).get("volumes") or []
    }


def container_mounts(container: Obj, volumes: dict[str, Path]) -> dict[str, str]:
    """Returns mountPath -> directory here for the container's ``volumeMounts``.

    Raises:
        VolumeError: a mount names a volume the pod does not have.
    """
    out: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        name = str(mount.get("name") or "")
        if name not in volumes:
            raise VolumeError(f'volumeMount "{name}" names no volume of the pod')
        host = volumes[name] / str(mount.get("subPath") or "")
        if mount.get("subPath"):
            host.parent.mkdir(parents=True, exist_ok=True)
        out[str(mount.get("mountPath") or "")] = str(host).rstrip("/")
    return out


def read_only_mounts(container: Obj) -> frozenset[str]:
    """Returns the mountPaths of the container's ``volumeMounts`` that are ``readOnly``."""
    return frozenset(
        str(m.get("mountPath") or "")
        for m in container.get("volumeMounts") or []
        if m.get("readOnly")
    )
