"""The simulated resource-quota controller: each ResourceQuota's ``status.hard`` follows its
``spec.hard`` and ``status.used`` is recounted from the namespace's objects.

kube-controller-manager's controller recounts on a quota change, on a delete of what a quota
counts, and on a pod change that alters its usage (a pod that ends frees its compute); admission
(:mod:`rayop.sim.admission.quota_admission`) charges creates in the meantime. Usage is
:mod:`rayop.sim.admission.quota_usage`'s.
"""

from __future__ import annotations

from fractions import Fraction

from rayop.apimachinery.objects import Obj
from rayop.apimachinery.quantity import Quantity
from rayop.sim.admission.quota_admission import quantities, render_quantities
from rayop.sim.admission.quota_usage import object_usage, quota_selects, resource_key_of
from rayop.sim.machinery.resources import ResourceInfo
from rayop.sim.storage.controller_base import StoreController, meta

__all__ = ["ResourceQuotaController"]

QUOTA_KEY = "/resourcequotas"


class ResourceQuotaController(StoreController):
    """Keeps every ResourceQuota's status (hard and used) current."""

    name = "resourcequotas"

    def needs_handling(
        self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None
    ) -> bool:
        namespace = str(meta(obj).get("namespace") or "")
        if info.key == QUOTA_KEY:
            status = obj.get("status") or {}
            hard = (obj.get("spec") or {}).get("hard") or {}
            return event_type != "DELETED" and (status.get("hard") != hard or "used" not in status)
        if (
            not namespace
            or next(self.store.iter_objects(self._quota_info(), namespace), None) is None
        ):
            return False
        if event_type == "MODIFIED":
            return old is not None and object_usage(info, obj) != object_usage(info, old)
        return True

    def _quota_info(self) -> ResourceInfo:
        found = self.store.resources.by_key(QUOTA_KEY)
        assert found is not None
        return found

    async def resync(self) -> None:
        for namespace in sorted({str(meta(q).get("namespace")) for q in self._all_quotas()}):
            await self.recount(namespace)

    def _all_quotas(self) -> list[Obj]:
        return list(self.store.iter_objects(self._quota_info()))

    async def handle(self, event_type: str, info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        await self.recount(str(meta(obj).get("namespace") or ""))

    async def recount(self, namespace: str) -> None:
        """Writes each quota of ``namespace`` its hard limits and its recounted usage."""
        quotas = self._quota_info()
        for quota in list(self.store.iter_objects(quotas, namespace)):
            name = str(meta(quota).get("name"))
            status = self._status(quota, namespace)

            def change(obj: Obj, status: Obj = status) -> bool:
                if obj.get("status") == status:
                    return False
                obj["status"] = status
                return True

            await self.mutate(quotas, namespace, name, change, subresource="status")

    def _status(self, quota: Obj, namespace: str) -> Obj:
        hard = quantities((quota.get("spec") or {}).get("hard"))
        used: dict[str, Fraction] = {name: Fraction(0) for name in hard}
        by_key: dict[str, list[str]] = {}
        for name in hard:
            key = resource_key_of(name)
            if key is not None:
                by_key.setdefault(key, []).append(name)
        for key, names in by_key.items():
            info = self.store.resources.by_key(key)
            if info is None:
                continue
            for obj in self.store.iter_objects(info, namespace):
                if not quota_selects(quota, info, obj):
                    continue
                usage = object_usage(info, obj)
                for name in names:
                    used[name] += usage.get(name, Fraction(0))
        shown = {name: Quantity(value, hard[name].format) for name, value in used.items()}
        return {"hard": render_quantities(hard), "used": render_quantities(shown)}
