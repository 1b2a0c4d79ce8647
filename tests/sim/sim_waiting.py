"""Test helpers: wait for store objects to reach a state, driven by the store's change feed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.store import Store

Obj = dict[str, Any]


async def wait_for(
    store: Store,
    info: ResourceInfo,
    namespace: str,
    name: str,
    predicate: Callable[[Obj | None], bool],
    *,
    timeout: float = 10.0,
) -> Obj | None:
    """Blocks until the object (None when absent) satisfies ``predicate``; returns it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Obj | None] = loop.create_future()
    ns = namespace if info.namespaced else ""

    def check(obj: Obj | None) -> None:
        if not done.done() and predicate(obj):
            done.set_result(obj)

    def on_event(event_type: str, i: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        md = obj["metadata"]
        if i.key == info.key and md.get("name") == name and md.get("namespace", "") == ns:
            check(None if event_type == "DELETED" else obj)

    unsubscribe = store.subscribe(on_event)
    try:
        check(store.peek(info, ns, name))
        return await asyncio.wait_for(done, timeout)
    finally:
        unsubscribe()


def condition(obj: Obj | None, ctype: str) -> Obj | None:
    """Returns the object's status condition of type ``ctype``, or None."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


def is_ready(obj: Obj | None) -> bool:
    """Tells whether a pod has condition Ready True."""
    cond = condition(obj, "Ready")
    return cond is not None and cond.get("status") == "True"


def info(store: Store, group: str, plural: str, version: str = "v1") -> ResourceInfo:
    """Returns a registered resource (asserting that it exists)."""
    found = store.resources.get(group, version, plural)
    assert found is not None, plural
    return found
