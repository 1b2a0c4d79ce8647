"""A container's environment as the kubelet resolves it: env, envFrom, the downward API, $(VAR).

``env`` entries take a ``value`` (with ``$(VAR)`` references to earlier entries expanded, ``$$``
escaping) or a ``valueFrom``: ``fieldRef`` (metadata.name/namespace/uid, labels['k'],
annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP(s), status.hostIP(s)),
``resourceFieldRef`` (the container's limits/requests with a divisor), ``configMapKeyRef`` and
``secretKeyRef``. ``envFrom`` adds every key of a ConfigMap or Secret (with a prefix).
A missing required reference raises :class:`EnvError`, which the kubelet reports as
``CreateContainerConfigError``, as kubelets do.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.quantity import parse_quantity

__all__ = ["EnvError", "Lookup", "expand", "field_value", "resolve_env"]

Lookup = Callable[[str, str], "Obj | None"]
"""``(kind, name) -> object or None`` for ``ConfigMap`` and ``Secret`` in the pod's namespace."""

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class EnvError(ValueError):
    """A reference of the container's env cannot be resolved (the container cannot start)."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Expands ``$(VAR)`` from ``env`` as the kubelet does (unknown references stay as written)."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REF.sub(sub, text)


def field_value(pod: Obj, path: str) -> str:
    """Returns the downward-API value of ``path`` (a fieldRef fieldPath) for the pod.

    Raises:
        EnvError: the path is not one the downward API offers.
    """
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    for prefix, source in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path == prefix:
            items = sorted((md.get(source) or {}).items())
            return "\n".join(f'{k}="{v}"' for k, v in items)
        if path.startswith(prefix + "["):
            key = path[len(prefix) + 1 : -1].strip("'\"")
            return str((md.get(source) or {}).get(key, ""))
    simple = {
        "metadata.name": md.get("name"),
        "metadata.namespace": md.get("namespace"),
        "metadata.uid": md.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(str(i.get("ip")) for i in status.get("podIPs") or []),
        "status.hostIPs": ",".join(str(i.get("ip")) for i in status.get("hostIPs") or []),
    }
    if path not in simple:
        raise EnvError(f'unsupported fieldRef fieldPath "{path}"')
    return str(simple[path] or "")


def _resource_value(container: Obj, ref: Obj) -> str:
    resource = str(ref.get("resource") or "")
    kind, _, name = resource.partition(".")
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(name)
    if raw is None:
        # No limit: the node's allocatable, as the kubelet reports (the plane's default node).
        raw = {"cpu": "16", "memory": "64Gi", "ephemeral-storage": "100Gi"}.get(name, "0")
    divisor = parse_quantity(str(ref.get("divisor") or "1"))
    value = parse_quantity(str(raw)) / (divisor or 1)
    return str(math.ceil(value))


def _key_ref(kind: str, ref: Obj, lookup: Lookup) -> str | None:
    name = str(ref.get("name") or "")
    key = str(ref.get("key") or "")
    obj = lookup(kind, name)
    optional = bool(ref.get("optional"))
    if obj is None:
        if optional:
            return None
        raise EnvError(f'{kind.lower()} "{name}" not found')
    data = _data(kind, obj)
    if key not in data:
        if optional:
            return None
        raise EnvError(f"couldn't find key {key} in {kind} {name}")
    return data[key]


def _data(kind: str, obj: Obj) -> dict[str, str]:
    if kind == "Secret":
        out = {
            k: base64.b64decode(str(v)).decode(errors="replace")
            for k, v in (obj.get("data") or {}).items()
        }
        out.update({k: str(v) for k, v in (obj.get("stringData") or {}).items()})
        return out
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


def resolve_env(pod: Obj, container: Obj, lookup: Lookup) -> dict[str, str]:
    """Returns the container's env (envFrom first, then env in order), everything resolved.

    Raises:
        EnvError: a required ConfigMap, Secret or key is missing, or a fieldRef is unknown.
    """
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = source.get(key)
            if ref is None:
                continue
            obj = lookup(kind, str(ref.get("name") or ""))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise EnvError(f'{kind.lower()} "{ref.get("name")}" not found')
            for name, value in _data(kind, obj).items():
                env[prefix + name] = value
    for item in container.get("env") or []:
        name = str(item.get("name") or "")
        source = item.get("valueFrom")
        if source is None:
            env[name] = expand(str(item.get("value") or ""), env)
        elif "fieldRef" in source:
            env[name] = field_value(pod, str(source["fieldRef"].get("fieldPath") or ""))
        elif "resourceFieldRef" in source:
            env[name] = _resource_value(container, source["resourceFieldRef"])
        elif "configMapKeyRef" in source:
            found = _key_ref("ConfigMap", source["configMapKeyRef"], lookup)
            if found is not None:
                env[name] = found
        elif "secretKeyRef" in source:
            found = _key_ref("Secret", source["secretKeyRef"], lookup)
            if found is not None:
                env[name] = found
    return env
