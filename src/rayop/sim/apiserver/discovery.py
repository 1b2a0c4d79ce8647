"""Discovery documents: /version, /api, /api/v1, /apis, /apis/<g>/<v> and minimal OpenAPI.

Aggregated discovery is not offered: answering the plain form makes clients ask per group.
"""

from __future__ import annotations

from typing import Any

from rayop.sim.machinery import kube_version
from rayop.sim.machinery.resources import ResourceInfo, ResourceRegistry

__all__ = [
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "openapi_v3_group_version",
    "openapi_v3_index",
    "version_info",
]

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_SUB_VERBS = ["get", "patch", "update"]


def version_info() -> dict[str, Any]:
    """Returns the /version document (:mod:`rayop.sim.machinery.kube_version`)."""
    return {
        "major": str(kube_version.MAJOR),
        "minor": str(kube_version.MINOR),
        "gitVersion": kube_version.GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    """Returns the /api APIVersions document."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _preferred(versions: list[str]) -> str:
    return "v1" if "v1" in versions else versions[0]


def api_group_list(registry: ResourceRegistry) -> dict[str, Any]:
    """Returns the /apis APIGroupList document."""
    groups = []
    for group, versions in sorted(registry.group_versions().items()):
        if not group:
            continue
        pref = _preferred(versions)
        groups.append(
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                "preferredVersion": {"groupVersion": f"{group}/{pref}", "version": pref},
            }
        )
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: ResourceRegistry, group: str) -> dict[str, Any] | None:
    """Returns the /apis/<group> APIGroup document, or None for an unknown group."""
    versions = registry.group_versions().get(group)
    if not versions or not group:
        return None
    pref = _preferred(versions)
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
        "preferredVersion": {"groupVersion": f"{group}/{pref}", "version": pref},
    }


def _resource_entry(info: ResourceInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": _VERBS,
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    return entry


def api_resource_list(
    registry: ResourceRegistry, group: str, version: str
) -> dict[str, Any] | None:
    """Returns the APIResourceList of one group/version, or None when it is not served."""
    infos = sorted(
        (i for i in registry.all() if i.group == group and i.version == version),
        key=lambda i: i.plural,
    )
    if not infos:
        return None
    resources: list[dict[str, Any]] = []
    for info in infos:
        resources.append(_resource_entry(info))
        if info.has_status:
            resources.append(
                {
                    "name": f"{info.plural}/status",
                    "singularName": "",
                    "namespaced": info.namespaced,
                    "kind": info.kind,
                    "verbs": _SUB_VERBS,
                }
            )
        if info.key == "/services":
            resources.append(
                {
                    "name": "services/proxy",
                    "singularName": "",
                    "namespaced": True,
                    "kind": "ServiceProxyOptions",
                    "verbs": ["create", "delete", "get", "patch", "update"],
                }
            )
    gv = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }


def openapi_v3_index(registry: ResourceRegistry) -> dict[str, Any]:
    """Returns the /openapi/v3 index: one entry per served group/version."""
    paths: dict[str, Any] = {}
    for group, versions in registry.group_versions().items():
        for v in versions:
            rel = f"api/{v}" if not group else f"apis/{group}/{v}"
            paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}"}
    return {"paths": paths}


_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "fieldValidation instructs the server on how to handle unknown fields.",
    "schema": {"type": "string", "uniqueItems": True},
}


def openapi_v3_group_version(registry: ResourceRegistry, rel: str) -> dict[str, Any] | None:
    """Returns the OpenAPI v3 document of one group/version (``api/v1``, ``apis/<g>/<v>``).

    The document declares every resource's operations with their group-version-kind and the
    ``fieldValidation`` parameter, which is what kubectl checks before it leaves validation to
    the server. Schemas are not included.
    """
    parts = rel.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        group, version = "", parts[1]
    elif parts[0] == "apis" and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    infos = [i for i in registry.all() if i.group == group and i.version == version]
    if not infos:
        return None
    prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    paths: dict[str, Any] = {}
    for info in infos:
        gvk = {"group": group, "version": version, "kind": info.kind}
        base = (
            f"{prefix}/namespaces/{{namespace}}/{info.plural}"
            if info.namespaced
            else f"{prefix}/{info.plural}"
        )

        def op(action: str, gvk: dict[str, str] = gvk) -> dict[str, Any]:
            return {
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [_FIELD_VALIDATION],
                "responses": {"200": {"description": "OK"}},
            }

        paths[base] = {"post": op("post"), "get": op("list")}
        paths[base + "/{name}"] = {
            "get": op("get"),
            "put": op("put"),
            "patch": op("patch"),
            "delete": op("delete"),
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": kube_version.GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }
