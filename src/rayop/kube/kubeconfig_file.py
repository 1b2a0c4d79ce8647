"""Reads kubeconfig files with PyYAML: merging, relative paths and context selection.

As client-go's ``clientcmd`` loading rules: a colon-separated list of files is merged, the
first file to define a cluster, user or context name (or ``current-context``) winning; missing
files in the list are skipped. File references in a file (``certificate-authority``,
``client-certificate``, ``client-key``, ``tokenFile``, and an exec ``command`` containing a
path separator) are resolved against that file's directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rayop.kube.credentials import ConfigError

_CLUSTER_FILES = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")


@dataclass(frozen=True, kw_only=True)
class Selected:
    """The context picked from a merged kubeconfig, with its cluster and user."""

    context: str
    cluster: Mapping[str, Any]
    user: Mapping[str, Any]
    namespace: str


def _resolve(base: Path, value: Any) -> Any:
    if isinstance(value, str) and value and not os.path.isabs(value):
        return str(base / os.path.expanduser(value))
    return value


def _items(doc: Mapping[str, Any], section: str, field: str) -> Iterator[dict[str, Any]]:
    """Yields the ``field`` mapping of each entry of ``section`` (the document's own dicts)."""
    for entry in doc.get(section) or []:
        item = entry.get(field) if isinstance(entry, dict) else None
        if isinstance(item, dict):
            yield item


def _resolve_keys(base: Path, item: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Resolves the file paths ``item`` holds under ``keys`` against ``base``."""
    for key in keys:
        if key in item:
            item[key] = _resolve(base, item[key])


def _read_file(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot load kubeconfig {str(path)!r}: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"cannot load kubeconfig {str(path)!r}: not a mapping")
    base = path.parent
    for cluster in _items(doc, "clusters", "cluster"):
        _resolve_keys(base, cluster, _CLUSTER_FILES)
    for user in _items(doc, "users", "user"):
        _resolve_keys(base, user, _USER_FILES)
        exec_spec = user.get("exec")
        if isinstance(exec_spec, dict) and os.sep in str(exec_spec.get("command") or ""):
            exec_spec["command"] = _resolve(base, exec_spec["command"])
    return doc


def _named(doc: Mapping[str, Any], section: str, field: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name"):
            out[str(entry["name"])] = dict(entry.get(field) or {})
    return out


def read_kubeconfig(paths: str) -> dict[str, Any]:
    """Reads and merges a colon-separated list of kubeconfig files (missing ones skipped).

    Returns:
        ``{"clusters": {name: cluster}, "users": {...}, "contexts": {...},
        "current-context": str}``.

    Raises:
        ConfigError: No file exists, or one is not valid YAML.
    """
    merged: dict[str, Any] = {"clusters": {}, "users": {}, "contexts": {}, "current-context": ""}
    found = False
    for item in paths.split(os.pathsep):
        if not item:
            continue
        path = Path(item).expanduser()
        if not path.exists():
            continue
        found = True
        doc = _read_file(path)
        for section, field in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for name, value in _named(doc, section, field).items():
                merged[section].setdefault(name, value)
        if not merged["current-context"]:
            merged["current-context"] = str(doc.get("current-context") or "")
    if not found:
        raise ConfigError(f"kubeconfig {paths!r} does not exist")
    return merged


def select_context(merged: Mapping[str, Any], context: str | None) -> Selected:
    """Picks ``context`` (or the current-context) with its cluster and user.

    Raises:
        ConfigError: No context is set, or it names a context, cluster or user not defined.
    """
    name = context or merged.get("current-context") or ""
    if not name:
        raise ConfigError("invalid configuration: no configuration has been provided")
    ctx = merged["contexts"].get(name)
    if ctx is None:
        raise ConfigError(f'context "{name}" does not exist')
    cluster_name = str(ctx.get("cluster") or "")
    cluster = merged["clusters"].get(cluster_name)
    if cluster is None:
        raise ConfigError(f'invalid configuration: cluster "{cluster_name}" not found')
    if not cluster.get("server"):
        raise ConfigError(f'invalid configuration: no server found for cluster "{cluster_name}"')
    user_name = str(ctx.get("user") or "")
    user = merged["users"].get(user_name, {}) if user_name else {}
    if user_name and user_name not in merged["users"]:
        raise ConfigError(f'invalid configuration: user "{user_name}" not found')
    return Selected(
        context=name,
        cluster=cluster,
        user=user,
        namespace=str(ctx.get("namespace") or "default"),
    )
