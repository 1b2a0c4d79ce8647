"""The label and annotation keys sharding writes: :class:`ShardKeys` (the operator chooses them).

On a root object: ``shard`` (the replica that owns it), ``drain`` (``"true"``: the sharder asks
the owner to let it go), ``released`` (the replica that acknowledged a drain, until the root is
assigned again), the ``handover`` annotation (what the new owner's caches must have
seen before its first pass) and the ``assigned`` annotation (the replica the sharder last gave
it to: a shard label that disagrees with it was edited by hand). On every object the operator creates for a root: ``shard`` and
``root`` (the root's UID, so that the sharder finds a root's objects with one selector). On
each replica's membership Lease: ``lease`` = ``"true"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

TRUE = "true"


@dataclass(frozen=True, slots=True)
class ShardKeys:
    """The keys; every one a valid label (or annotation) key."""

    shard: str
    drain: str
    released: str
    root: str
    lease: str
    handover: str
    assigned: str
    lease_prefix: str
    """The name of a replica's Lease is this prefix plus the replica id."""

    def owned_by(self, member: str) -> str:
        """Returns the selector of what ``member`` owns."""
        return f"{self.shard}={member}"

    @property
    def unassigned(self) -> str:
        """Returns the selector of objects no replica owns."""
        return f"!{self.shard}"

    def orphaned(self, live: Iterable[str]) -> str:
        """Returns the selector of objects owned by a replica that is not in ``live``."""
        members = sorted(live)
        if not members:
            return self.shard
        return f"{self.shard},{self.shard} notin ({','.join(members)})"

    def lease_name(self, member: str) -> str:
        """Returns the name of ``member``'s Lease."""
        return f"{self.lease_prefix}{member}"


def label_path(key: str) -> str:
    """Returns the JSON pointer (RFC 6901) of a label key."""
    return "/metadata/labels/" + key.replace("~", "~0").replace("/", "~1")


def annotation_path(key: str) -> str:
    """Returns the JSON pointer (RFC 6901) of an annotation key."""
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")
