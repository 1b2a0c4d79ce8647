"""The registry of served resources: built-in kinds plus those defined by CRDs."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUILTIN_RESOURCES", "ResourceInfo", "ResourceRegistry", "infos_from_crd"]


@dataclass(frozen=True)
class ResourceInfo:
    """Describes one served resource (a group/version/plural).

    Attributes:
        group: API group ("" for the core group).
        version: API version ("v1").
        plural: Resource name in URLs ("pods").
        kind: Object kind ("Pod").
        namespaced: Whether objects live in a namespace.
        singular: Singular name ("pod").
        short_names: kubectl short names ("po",).
        categories: kubectl categories ("all",).
        has_status: Whether a /status subresource exists (O2/O3 semantics).
        list_kind: Kind of lists (defaults to ``kind + "List"``).
        printer_columns: CRD additionalPrinterColumns (dicts with name, type, jsonPath...).
        schema: The CRD's openAPIV3Schema for this version (None for built-ins).
        crd_name: Name of the defining CRD ("" for built-ins).
        storage_key: The key of another resource whose objects this one serves through a
            conversion (events.k8s.io/v1 events are stored as core/v1 events); "" for none.
        deprecation_warning: The Warning a request for a deprecated CRD version gets ("" when
            the version is not deprecated).
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    list_kind: str = ""
    printer_columns: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    crd_name: str = ""
    storage_key: str = ""
    deprecation_warning: str = ""

    def __post_init__(self) -> None:
        if not self.list_kind:
            object.__setattr__(self, "list_kind", self.kind + "List")

    @functools.cached_property
    def api_version(self) -> str:
        """The apiVersion objects carry ("v1" or "group/version")."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @functools.cached_property
    def key(self) -> str:
        """The storage key shared by every version: ``"group/plural"`` ("/pods" for core).

        Aliased resources (``storage_key`` set) share the key of the resource they convert to.
        """
        return self.storage_key or f"{self.group}/{self.plural}"

    @property
    def qualified(self) -> str:
        """``plural`` or ``plural.group``, as used in error messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def is_custom(self) -> bool:
        """Whether a CRD defines this resource."""
        return bool(self.crd_name)


def _r(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    *,
    status: bool = False,
    categories: tuple[str, ...] = (),
) -> ResourceInfo:
    return ResourceInfo(
        group,
        version,
        plural,
        kind,
        namespaced,
        kind.lower(),
        short_names=short,
        categories=categories,
        has_status=status,
    )


BUILTIN_RESOURCES: tuple[ResourceInfo, ...] = (
    _r("", "v1", "namespaces", "Namespace", False, ("ns",), status=True),
    _r("", "v1", "pods", "Pod", True, ("po",), status=True, categories=("all",)),
    _r("", "v1", "services", "Service", True, ("svc",), status=True, categories=("all",)),
    _r("", "v1", "endpoints", "Endpoints", True, ("ep",)),
    _r("", "v1", "events", "Event", True, ("ev",)),
    _r("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _r("", "v1", "secrets", "Secret", True),
    _r("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), status=True),
    _r("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), status=True),
    _r("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",), status=True),
    _r("", "v1", "nodes", "Node", False, ("no",), status=True),
    _r("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
    ResourceInfo(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        True,
        "event",
        short_names=("ev",),
        storage_key="/events",
    ),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    _r("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _r("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _r("batch", "v1", "jobs", "Job", True, (), status=True, categories=("all",)),
    # Run by the controller manager (sim/controller_manager/deployments.py, replica_sets.py,
    # stateful_sets.py).
    _r(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        ("deploy",),
        status=True,
        categories=("all",),
    ),
    _r("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), status=True, categories=("all",)),
    _r(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        ("sts",),
        status=True,
        categories=("all",),
    ),
    _r("coordination.k8s.io", "v1", "leases", "Lease", True),
    _r("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    _r("networking.k8s.io", "v1", "ingresses", "Ingress", True, ("ing",), status=True),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, ("netpol",)),
    _r(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        status=True,
    ),
)


def infos_from_crd(crd: Mapping[str, Any]) -> list[ResourceInfo]:
    """Returns one ResourceInfo per served version of a CRD object, the storage version first.

    A served version that is not the storage version (while the storage version is served)
    gets ``storage_key``: its objects are the storage version's, converted on the way in and
    out (the conversion strategy None: only ``apiVersion`` changes; see ``sim/storage/aliases``).
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    kind = names.get("kind", "")
    plural = names.get("plural", "")
    out: list[ResourceInfo] = []
    served = [v for v in spec.get("versions") or [] if v.get("served", True)]
    stored_served = any(v.get("storage") for v in served)
    for ver in sorted(served, key=lambda v: not v.get("storage")):
        sub = ver.get("subresources") or {}
        schema = (ver.get("schema") or {}).get("openAPIV3Schema")
        out.append(
            ResourceInfo(
                group,
                ver.get("name", "v1"),
                plural,
                kind,
                spec.get("scope", "Namespaced") == "Namespaced",
                names.get("singular") or kind.lower(),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                has_status="status" in sub,
                list_kind=names.get("listKind") or kind + "List",
                printer_columns=tuple(ver.get("additionalPrinterColumns") or ()),
                schema=schema,
                crd_name=(crd.get("metadata") or {}).get("name", ""),
                storage_key=(
                    f"{group}/{plural}" if stored_served and not ver.get("storage") else ""
                ),
                deprecation_warning=_deprecation(group, kind, ver),
            )
        )
    return out


def _deprecation(group: str, kind: str, version: Mapping[str, Any]) -> str:
    """Returns a deprecated version's warning (kube-apiserver's default when it has none)."""
    if not version.get("deprecated"):
        return ""
    return str(
        version.get("deprecationWarning")
        or f"{group}/{version.get('name', '')} {kind} is deprecated"
    )


class ResourceRegistry:
    """Looks up served resources by group/version/plural, by kind, or by storage key.

    Mutated only by the store (CRD create/update/delete); single-threaded.
    """

    def __init__(self, builtins: tuple[ResourceInfo, ...] = BUILTIN_RESOURCES) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceInfo] = {}
        self._by_kind: dict[tuple[str, str], ResourceInfo] = {}
        self._by_key: dict[str, ResourceInfo] = {}
        self._crd_infos: dict[str, list[ResourceInfo]] = {}
        for info in builtins:
            self.register(info)

    def register(self, info: ResourceInfo) -> None:
        """Adds (or replaces) one resource version."""
        self._by_gvr[(info.group, info.version, info.plural)] = info
        self._by_kind[(info.api_version, info.kind)] = info
        self._by_key.setdefault(info.key, info)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """Returns the resource served at ``/apis/<group>/<version>/<plural>``, or None."""
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        """Returns the resource for an object's ``apiVersion`` and ``kind``, or None."""
        return self._by_kind.get((api_version, kind))

    def by_key(self, key: str) -> ResourceInfo | None:
        """Returns one served version of the resource stored under ``key`` ("group/plural")."""
        return self._by_key.get(key)

    def all(self) -> Iterator[ResourceInfo]:
        """Iterates over every served resource version."""
        return iter(list(self._by_gvr.values()))

    def group_versions(self) -> dict[str, list[str]]:
        """Returns ``{group: [versions...]}`` of every served group (core as "")."""
        out: dict[str, list[str]] = {}
        for g, v, _ in self._by_gvr:
            vs = out.setdefault(g, [])
            if v not in vs:
                vs.append(v)
        return out

    def register_crd(self, crd: Mapping[str, Any]) -> list[ResourceInfo]:
        """Registers (or re-registers) every served version of a CRD; returns them."""
        name = (crd.get("metadata") or {}).get("name", "")
        self.unregister_crd(name)
        infos = infos_from_crd(crd)
        for info in infos:
            self._by_gvr[(info.group, info.version, info.plural)] = info
            self._by_kind[(info.api_version, info.kind)] = info
            if info is infos[0]:
                self._by_key[info.key] = info  # the storage version
        if infos:
            self._crd_infos[name] = infos
        return infos

    def unregister_crd(self, crd_name: str) -> list[ResourceInfo]:
        """Removes every version defined by the named CRD; returns what was removed."""
        infos = self._crd_infos.pop(crd_name, [])
        for info in infos:
            self._by_gvr.pop((info.group, info.version, info.plural), None)
            self._by_kind.pop((info.api_version, info.kind), None)
            if self._by_key.get(info.key) is info:
                del self._by_key[info.key]
        for info in infos:
            for other in self._by_gvr.values():
                if other.key == info.key:
                    self._by_key[info.key] = other
        return infos

    def crd_infos(self, crd_name: str) -> list[ResourceInfo]:
        """Returns the resource versions a CRD currently defines."""
        return list(self._crd_infos.get(crd_name, ()))
