"""Which replicas are alive: each holds a Lease of its own (:class:`MemberLease`), and
:class:`Membership` reads them all.

A replica's Lease is named ``<lease_prefix><replica id>`` and labelled ``<lease key>=true``; it
is acquired and renewed by a :class:`~rayop.runtime.leaderelection.LeaderElector` (the same
renew deadline and retry period as leader election), whose identity is the replica id plus a
random suffix, so that a second process started with the same replica id waits for the first
one's Lease to lapse instead of sharing its objects. A replica whose renewals fail for the renew
deadline must stop reconciling at once (:class:`MembershipLost`), before its Lease can expire
on anyone else's clock.

Expiry is judged as leader election judges it: a Lease counts as alive until
``leaseDurationSeconds`` after the observer last *saw its spec change*, measured on the
observer's own clock; the timestamps in the record are never compared with local time, so
clock skew between replicas does not matter (only clock rate does).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any, Protocol, Unpack

from rayop.kube.errors import ApiError, Conflict, NotFound
from rayop.kube.options import DeleteOptions, ListOptions
from rayop.kube.resource import Resource
from rayop.kube.resources import LEASES
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.leaderelection import (
    Callback,
    LeaderElectionSettings,
    LeaderElector,
    LeaseClient,
)
from rayop.runtime.manager import LeadershipLost
from rayop.runtime.sharding.keys import TRUE, ShardKeys

log = logging.getLogger(__name__)


class MembershipLost(LeadershipLost):
    """This replica's Lease could not be renewed: it must stop reconciling at once and exit
    (the manager treats it as a lost leader election: controllers are aborted, not drained)."""


class LeaseLister(Protocol):
    """The part of the API client :class:`Membership` uses."""

    async def list(self, res: Resource, **options: Unpack[ListOptions]) -> dict[str, Any]: ...

    async def delete(
        self, res: Resource, name: str, *, namespace: str | None = None,
        **options: Unpack[DeleteOptions],
    ) -> dict[str, Any]: ...  # fmt: skip


GONE_AFTER = 300.0
"""Seconds a member Lease must stay unchanged (released, or lapsed and never renewed) on the
sharder's clock before :meth:`Membership.forget_gone` deletes it: replicas named after their
pods (a Deployment's) leave one Lease behind per pod that ever ran, and the set would only
grow. A replica that comes back later simply creates its Lease again."""


def member_elector(
    client: LeaseClient,
    member: str,
    keys: ShardKeys,
    timing: LeaderElectionSettings,
    *,
    on_joined: Callback | None = None,
    clock: Clock = MONOTONIC,
) -> LeaderElector:
    """Returns the elector that holds ``member``'s Lease (timings from ``timing``);
    ``on_joined`` runs once the Lease is held."""
    settings = replace(
        timing,
        name=keys.lease_name(member),
        identity=f"{member}_{uuid.uuid4()}",
        labels=((keys.lease, TRUE),),
        release_on_cancel=True,
    )
    return LeaderElector(client, settings, on_started_leading=on_joined, clock=clock)


async def hold_membership(elector: LeaderElector) -> None:
    """Holds the Lease until :meth:`LeaderElector.stop`; blocks.

    Raises:
        MembershipLost: a renewal failed for the renew deadline.
    """
    if await elector.run():
        raise MembershipLost(f"lease {elector.settings.name} could not be renewed")


@dataclass
class _Seen:
    spec: dict[str, Any]
    at: float
    version: str = ""


class Membership:
    """Lists the membership Leases and tells which replicas are alive."""

    def __init__(
        self, client: LeaseLister, namespace: str, keys: ShardKeys, *, clock: Clock = MONOTONIC
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._keys = keys
        self._clock = clock
        self._seen: dict[str, _Seen] = {}

    async def live(self) -> frozenset[str]:
        """Reads the Leases; returns the ids of the replicas whose Lease is held and current."""
        result = await self._client.list(
            LEASES, namespace=self._namespace, label_selector=f"{self._keys.lease}={TRUE}"
        )
        now = self._clock.now()
        prefix = self._keys.lease_prefix
        alive: set[str] = set()
        names: set[str] = set()
        for lease in result.get("items") or ():
            name = str((lease.get("metadata") or {}).get("name", ""))
            if not name.startswith(prefix):
                continue
            names.add(name)
            spec = dict(lease.get("spec") or {})
            seen = self._seen.get(name)
            if seen is None or seen.spec != spec:
                seen = self._seen[name] = _Seen(spec, now)
            seen.version = str((lease.get("metadata") or {}).get("resourceVersion") or "")
            duration = float(spec.get("leaseDurationSeconds") or 0)
            if spec.get("holderIdentity") and seen.at + duration > now:
                alive.add(name[len(prefix) :])
        for gone in set(self._seen) - names:
            del self._seen[gone]
        return frozenset(alive)

    async def forget_gone(self, after: float = GONE_AFTER) -> list[str]:
        """Deletes the member Leases seen unchanged for ``after`` seconds by the last
        :meth:`live` (each on the condition that its resourceVersion is still the one seen, so
        that a Lease renewed meanwhile stays); returns the ids of the replicas forgotten."""
        now = self._clock.now()
        forgotten: list[str] = []
        for name, seen in list(self._seen.items()):
            if now - seen.at < after or not seen.version:
                continue
            try:
                await self._client.delete(
                    LEASES, name, namespace=self._namespace,
                    preconditions={"resourceVersion": seen.version},
                )  # fmt: skip
            except (NotFound, Conflict):
                continue  # gone already, or renewed since: the next read sees which
            del self._seen[name]
            member = name[len(self._keys.lease_prefix) :]
            log.info("member Lease %s of replica %s deleted: unchanged for %.0f s", name,
                     member, now - seen.at)  # fmt: skip
            forgotten.append(member)
        return forgotten


async def observe_membership(
    membership: Membership, interval: float, *, clock: Clock = MONOTONIC
) -> None:
    """Reads the Leases every ``interval`` seconds until cancelled, so that ``membership``
    knows since when each one is unchanged whenever it is asked (a failed read is retried)."""
    while True:
        try:
            await membership.live()
        except ApiError as exc:
            log.info("membership Leases not read: %s", exc)
        await clock.sleep(interval)


class LeaseReader(Protocol):
    """The part of the API client :func:`renewed_holder` uses."""

    async def get(self, res: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]: ...


async def renewed_holder(
    client: LeaseReader, namespace: str, name: str, *, clock: Clock = MONOTONIC
) -> str | None:
    """Returns the holder of the Lease ``name`` if it is renewed within its duration, else None
    (no such Lease, no holder, or a holder that stopped renewing: a crashed process). Blocks
    for up to the Lease's duration, and only when it has a holder."""
    try:
        first = await client.get(LEASES, name, namespace=namespace)
    except NotFound:
        return None
    spec = dict(first.get("spec") or {})
    holder = str(spec.get("holderIdentity") or "")
    if not holder:
        return None
    await clock.sleep(float(spec.get("leaseDurationSeconds") or 0) + 1.0)
    try:
        second = await client.get(LEASES, name, namespace=namespace)
    except NotFound:
        return None
    later = dict(second.get("spec") or {})
    if later == spec:
        return None  # unchanged for a whole duration: its holder is gone
    return str(later.get("holderIdentity") or "") or None
