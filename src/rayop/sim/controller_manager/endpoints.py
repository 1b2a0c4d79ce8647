"""The simulated endpoints controllers: Endpoints and EndpointSlices follow ready pods.

For every Service with a selector, the core v1 Endpoints object of the same name lists the
selected pods' IPs (ready ones under ``addresses``, the others under ``notReadyAddresses``)
with the service's ports resolved against the pods' container ports, and one
discovery.k8s.io/v1 EndpointSlice (label ``kubernetes.io/service-name``, owned by the Service)
lists the same pods with ready/serving/terminating conditions. Both are rewritten only when
they change, and removed with the Service.

Pods and selectors are indexed by label (:mod:`.label_index`), so a pod event costs the
Services it may match, and a sync the pods its Service selects, not the namespace's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rayop.apimachinery.labels import LabelSelector, label_selector_from_dict
from rayop.apimachinery.objects import Obj
from rayop.sim.controller_manager.label_index import (
    Pair,
    PodLabelIndex,
    SelectorIndex,
    label_pairs,
)
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.nodes.pod_status import condition_true
from rayop.sim.storage.controller_base import StoreController, error_code, meta
from rayop.sim.storage.store import Store

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"

Key = tuple[str, str]


@dataclass(frozen=True)
class _Service:
    uid: str
    selector: LabelSelector
    pairs: frozenset[Pair]
    ports: tuple[Obj, ...]
    labels: tuple[tuple[str, str], ...]
    publish_not_ready: bool


def _service_entry(svc: Obj) -> _Service | None:
    spec = svc.get("spec") or {}
    selector = spec.get("selector")
    if not selector or spec.get("type") == "ExternalName":
        return None
    return _Service(
        uid=str(meta(svc).get("uid")),
        selector=label_selector_from_dict(selector),
        pairs=label_pairs(selector),
        ports=tuple(p for p in spec.get("ports") or [] if isinstance(p, dict)),
        labels=tuple(sorted((meta(svc).get("labels") or {}).items())),
        publish_not_ready=bool(spec.get("publishNotReadyAddresses")),
    )


def _resolve_port(port: Obj, pod: Obj) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target:
                value = cport.get("containerPort")
                return int(value) if value is not None else None
    return None


def _ports_for(svc: _Service, pod: Obj) -> tuple[tuple[str, int, str], ...]:
    out = []
    for port in svc.ports:
        number = _resolve_port(port, pod)
        if number is not None:
            out.append((str(port.get("name") or ""), number, str(port.get("protocol") or "TCP")))
    return tuple(out)


def _port_dicts(ports: tuple[tuple[str, int, str], ...]) -> list[Obj]:
    out = []
    for name, number, protocol in ports:
        entry: Obj = {"port": number, "protocol": protocol}
        if name:
            entry["name"] = name
        out.append(entry)
    return out


def _target_ref(pod: Obj) -> Obj:
    md = meta(pod)
    return {
        "kind": "Pod",
        "namespace": md.get("namespace"),
        "name": md.get("name"),
        "uid": md.get("uid"),
    }


class EndpointsController(StoreController):
    """Keeps Endpoints and EndpointSlices of selector-based Services in line with their pods."""

    name = "endpoints"
    watched = frozenset({("", "pods"), ("", "services"), ("discovery.k8s.io", "endpointslices")})

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._services: dict[Key, _Service] = {}
        self._pods = PodLabelIndex()
        self._selectors = SelectorIndex()
        self._slices: dict[Key, str] = {}
        self._dirty: set[Key] = set()

    def observe(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = meta(obj)
        key = (str(md.get("namespace") or ""), str(md.get("name")))
        if info.plural == "services":
            entry = None if event_type == "DELETED" else _service_entry(obj)
            if entry is None:
                self._services.pop(key, None)
                self._selectors.remove(*key)
            else:
                self._services[key] = entry
                self._selectors.put(*key, entry.pairs)
            self._dirty.add(key)
        elif info.plural == "pods":
            pairs = label_pairs(md.get("labels"))
            if event_type == "DELETED":
                self._pods.remove(*key)
            else:
                self._pods.put(*key, obj, pairs)
            for labels in (pairs, None if old is None else label_pairs(meta(old).get("labels"))):
                if labels is not None:
                    for name in self._selectors.matching(key[0], labels):
                        self._dirty.add((key[0], name))
        else:
            service = (md.get("labels") or {}).get(SERVICE_NAME_LABEL)
            if service and (md.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY:
                skey = (key[0], str(service))
                if event_type == "DELETED":
                    if self._slices.get(skey) == key[1]:
                        self._slices.pop(skey, None)
                else:
                    self._slices.setdefault(skey, key[1])

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        return bool(self._dirty)

    async def resync(self) -> None:
        for group, plural in (
            ("discovery.k8s.io", "endpointslices"),
            ("", "pods"),
            ("", "services"),
        ):
            info = self.resource(group, "v1", plural)
            if info is None:
                continue
            items, _ = self.store.list(info)
            for obj in items:
                self.observe("ADDED", info, obj, None)
        await self._flush()

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        await self._flush()

    async def _flush(self) -> None:
        while self._dirty:
            namespace, name = self._dirty.pop()
            await self.sync(namespace, name)

    async def sync(self, namespace: str, name: str) -> None:
        """Rewrites the Endpoints and EndpointSlice of one Service; blocks until written."""
        svc = self._services.get((namespace, name))
        endpoints = self.resource("", "v1", "endpoints")
        slices = self.resource("discovery.k8s.io", "v1", "endpointslices")
        if svc is None:
            if endpoints is not None:
                await self._delete_endpoints(endpoints, namespace, name)
            slice_name = self._slices.pop((namespace, name), None)
            if slices is not None and slice_name:
                await self.delete(slices, namespace, slice_name)
            return
        pods = sorted(
            (
                p
                for p in self._pods.matching(namespace, svc.pairs)
                if (p.get("status") or {}).get("podIP")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ),
            key=lambda p: str((p.get("status") or {}).get("podIP")),
        )
        if endpoints is not None:
            await self._write_endpoints(endpoints, namespace, name, svc, pods)
        if slices is not None:
            await self._write_slice(slices, namespace, name, svc, pods)

    async def _delete_endpoints(self, info: ResourceInfo, namespace: str, name: str) -> None:
        current = await self.get(info, namespace, name)
        if current is not None and not (meta(current).get("annotations") or {}).get(
            "sim.rayop/manual"
        ):
            await self.delete(info, namespace, name)

    def _subsets(self, svc: _Service, pods: list[Obj]) -> list[Obj]:
        groups: dict[tuple[tuple[str, int, str], ...], Obj] = {}
        for pod in pods:
            if meta(pod).get("deletionTimestamp") and not svc.publish_not_ready:
                continue
            ports = _ports_for(svc, pod)
            subset = groups.setdefault(ports, {})
            address: Obj = {"ip": pod["status"]["podIP"], "targetRef": _target_ref(pod)}
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                address["nodeName"] = node
            ready = condition_true(pod, "Ready") or svc.publish_not_ready
            subset.setdefault("addresses" if ready else "notReadyAddresses", []).append(address)
        out = []
        for ports, subset in groups.items():
            if ports:
                subset["ports"] = _port_dicts(ports)
            out.append(subset)
        return out

    async def _write_endpoints(
        self, info: ResourceInfo, namespace: str, name: str, svc: _Service, pods: list[Obj]
    ) -> None:
        subsets = self._subsets(svc, pods)
        labels = dict(svc.labels)
        labels["endpoints.kubernetes.io/managed-by"] = "endpoint-controller"

        def change(obj: Obj) -> bool:
            if (obj.get("subsets") or []) == subsets and meta(obj).get("labels") == labels:
                return False
            obj["subsets"] = subsets
            meta(obj)["labels"] = labels
            return True

        if await self.get(info, namespace, name) is not None:
            await self.mutate(info, namespace, name, change)
            return
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
        }
        if subsets:
            body["subsets"] = subsets
        await self._create(info, namespace, body)

    async def _write_slice(
        self, info: ResourceInfo, namespace: str, name: str, svc: _Service, pods: list[Obj]
    ) -> None:
        entries: list[Obj] = []
        ports: tuple[tuple[str, int, str], ...] = ()
        for pod in pods:
            terminating = bool(meta(pod).get("deletionTimestamp"))
            ready = condition_true(pod, "Ready")
            entry: Obj = {
                "addresses": [pod["status"]["podIP"]],
                "conditions": {
                    "ready": ready and not terminating,
                    "serving": ready,
                    "terminating": terminating,
                },
                "targetRef": _target_ref(pod),
            }
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                entry["nodeName"] = node
            entries.append(entry)
            ports = ports or _ports_for(svc, pod)
        labels = {**dict(svc.labels), SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY}
        port_list = _port_dicts(ports)
        existing = self._slices.get((namespace, name))

        def change(obj: Obj) -> bool:
            if (
                (obj.get("endpoints") or []) == entries
                and (obj.get("ports") or []) == port_list
                and meta(obj).get("labels") == labels
            ):
                return False
            obj["endpoints"] = entries
            obj["ports"] = port_list
            meta(obj)["labels"] = labels
            return True

        if existing and await self.mutate(info, namespace, existing, change) is not None:
            return
        if existing and await self.get(info, namespace, existing) is not None:
            return
        body: Obj = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": f"{name}-",
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "name": name,
                        "uid": svc.uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "addressType": "IPv4",
            "endpoints": entries,
            "ports": port_list,
        }
        created = await self._create(info, namespace, body)
        if created is not None:
            self._slices[(namespace, name)] = str(meta(created).get("name"))

    async def _create(self, info: ResourceInfo, namespace: str, body: Obj) -> Obj | None:
        try:
            created: Any = await self.store.create(info, namespace, body)
        except Exception as exc:
            if error_code(exc) in (404, 409, 403):
                return None
            raise
        return created if isinstance(created, dict) else None
