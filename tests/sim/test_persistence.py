"""SQLite persistence: acknowledged writes survive a restart (even SIGKILL); RVs continue."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rayop.sim.machinery.errors import StatusError
from rayop.sim.storage.sqlite import SqlitePersistence
from rayop.sim.storage.store import Store

_WRITER = """
import asyncio, sys
from rayop.sim.storage.sqlite import SqlitePersistence
from rayop.sim.storage.store import Store
async def main():
    store = Store(persistence=SqlitePersistence(sys.argv[1]))
    cms = store.resources.get("", "v1", "configmaps")
    for i in range(200):
        obj = await store.create(cms, "default", {"metadata": {"name": f"c{i}"}})
        print(obj["metadata"]["resourceVersion"], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


async def test_objects_and_rv_survive_restart(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = Store(persistence=SqlitePersistence(db))
    cms = store.resources.get("", "v1", "configmaps")
    nsi = store.resources.get("", "v1", "namespaces")
    crds = store.resources.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert cms and nsi and crds
    await store.create(nsi, None, {"metadata": {"name": "team"}})
    await store.create(cms, "team", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    b = await store.create(cms, "team", {"metadata": {"name": "b"}})
    await store.delete(cms, "team", "b")
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    await store.create(crds, None, crd)
    w = store.resources.get("example.com", "v1", "widgets")
    assert w
    await store.create(w, "team", {"metadata": {"name": "w"}, "spec": {"size": 3}})
    rv = store.current_rv()
    reloaded = Store(persistence=SqlitePersistence(db))
    assert reloaded.current_rv() == rv
    a = await reloaded.get(cms, "team", "a")
    assert a["data"] == {"k": "v"}
    with pytest.raises(StatusError):
        await reloaded.get(cms, "team", "b")
    w2 = reloaded.resources.get("example.com", "v1", "widgets")
    assert w2 and (await reloaded.get(w2, "team", "w"))["spec"] == {"size": 3}
    c = await reloaded.create(cms, "team", {"metadata": {"name": "c"}})
    assert int(c["metadata"]["resourceVersion"]) == rv + 1
    with pytest.raises(StatusError) as ei:
        reloaded.open_watch(cms, resource_version=b["metadata"]["resourceVersion"])
    assert ei.value.code == 410


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db)], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        acked = [int(proc.stdout.readline()) for _ in range(50)]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    store = Store(persistence=SqlitePersistence(db))
    cms = store.resources.get("", "v1", "configmaps")
    assert cms
    items, rv = store.list(cms, "default")
    assert rv >= acked[-1]
    names = {i["metadata"]["name"] for i in items}
    assert {f"c{i}" for i in range(50)} <= names
