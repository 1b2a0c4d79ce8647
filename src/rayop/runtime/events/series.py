"""Folds isomorphic Events into series, as client-go's ``tools/events`` broadcaster does.

Two events are isomorphic when they share type, action, reason, reporting controller and
instance, ``regarding`` and ``related`` references (the note is not part of the key, so a
repeat keeps the first event's note). The first event of a key is created; the second turns
it into a series (count 2, ``lastObservedTime``) written at once with a patch; every later one
only raises the count in memory. The counts reach the API server from two sweeps:

- :meth:`SeriesCache.finish` (every 6 minutes from the first Event, client-go's ``finishTime``
  and phase): a series not observed for 6 minutes gets a final patch with its count and is
  forgotten, so the final counts reach the server when client-go's would (6 to 12 minutes
  after the last observation).
- :meth:`SeriesCache.forget_singles` (every minute between them, :data:`SWEEP_PERIOD`): a
  single event older than 6 minutes is forgotten. That is memory only: no write depends on it.
- :meth:`SeriesCache.refresh` (every 30 minutes): every series is patched with its count.

Recording costs a digest and a few dictionary lookups per event (one per generation of single
Events, about 14); the sweeps are O(series) once per period, and forget single Events a
generation at a time, never per event.

A cached Event costs little, because a replica keeps every single Event of its last 6 to 7.5
minutes and every series of its last 6 to 12 (tens of thousands while a fleet is created, at
the replica's client rate whatever its share of the fleet): the Event is kept as its JSON text
deflated against dictionaries learned from the cache's earlier Events (the informers' codec,
:class:`~rayop.runtime.informers.compact_store.ObjectCodec`: a typical Event's 600 bytes become
about 100), and its key as a 16-byte BLAKE2b digest of the fields above (a collision is as
likely as 2**-128 per pair); an Event observed once (most are) has no other object of its own.
A write that waits to be sent holds the same compressed text, not a copy. Kept as Python dicts
and tuples, a typical Event and its key cost about 1.8 KB; as plain JSON text, 0.8 KB; packed
with a record object and a float, 0.3 KB; packed by generation, about 0.2 KB
(``tests/runtime/test_event_series_cache.py``).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from rayop.runtime.informers.compact_store import ObjectCodec

FINISH_TIME = 6 * 60.0
"""client-go's ``finishTime``: a series ends this many seconds after its last observation."""

SWEEP_PERIOD = 60.0
"""How often :meth:`SeriesCache.forget_singles` runs. client-go sweeps every ``finishTime``, so
an Event observed once is forgotten 6 to 12 minutes after its observation, as the sweep's phase
falls; sweeping every minute makes that 6 to 7.5 (forgotten with its generation), within
client-go's range, and so holds at most 7.5 minutes' worth of single Events, not 12, while a
fleet is created at a steady rate (each replica records at its client rate, whatever its share:
the cached Events are a per-replica cost). Series end on client-go's own period and phase
(:meth:`SeriesCache.finish`), because ending one is a write."""

GENERATION = 30.0
"""Seconds of first observations a generation of single Events holds (see :class:`SeriesCache`)."""

REFRESH_TIME = 30 * 60.0
"""client-go's ``refreshTime``: how often every live series is patched with its count."""

EventKey = bytes
"""A digest of what makes two Events isomorphic (see :func:`event_key`)."""


@dataclass(slots=True, kw_only=True)
class EventWrite:
    """One API write of an Event: its creation, or a patch of its series.

    Attributes:
        verb: ``"create"`` or ``"patch"``.
        namespace: The Event's namespace.
        name: The Event's name.
        packed: The Event as created (without series), encoded by ``codec``: the bytes the
            series cache keeps, shared.
        codec: Decodes ``packed``.
        series: For a patch, the series (count and ``lastObservedTime``).
        tries: Attempts made so far.
        size: An estimate of the bytes this write holds while it waits.
    """

    verb: Literal["create", "patch"]
    namespace: str
    name: str
    packed: bytes
    codec: ObjectCodec
    series: dict[str, Any] | None = None
    tries: int = 0
    size: int = 0

    @property
    def body(self) -> dict[str, Any]:
        """For a create, the Event; for a patch, the strategic merge patch of its series."""
        if self.series is not None:
            return {"series": dict(self.series)}
        return _unpack(self.codec, self.packed)

    def whole(self) -> dict[str, Any]:
        """The whole Event, its series included: what a patch creates if it finds no Event
        (client-go's fallback when the Event was deleted meanwhile)."""
        event = _unpack(self.codec, self.packed)
        if self.series is not None:
            event["series"] = dict(self.series)
        return event


@dataclass(slots=True)
class _Cached:
    """An Event observed twice or more: a series."""

    packed: bytes
    """The Event as created (without series), packed."""
    count: int
    last_observed: float
    last_observed_text: str


class _Generation:
    """The Events first observed (once so far) since ``opened``: their keys and packed text."""

    __slots__ = ("last_added", "opened", "singles")

    def __init__(self, opened: float) -> None:
        self.opened = opened
        self.last_added = opened
        self.singles: dict[EventKey, bytes] = {}


def event_key(event: Mapping[str, Any]) -> EventKey:
    """Returns the key that makes two Events isomorphic (client-go's ``getKey``): a digest of
    type, action, reason, reporting controller and instance, and the ``regarding`` and
    ``related`` references (their keys sorted)."""
    fields = [
        str(event.get("type", "")),
        str(event.get("action", "")),
        str(event.get("reason", "")),
        str(event.get("reportingController", "")),
        str(event.get("reportingInstance", "")),
        event.get("regarding") or {},
        event.get("related") or {},
    ]
    return hashlib.blake2b(
        orjson.dumps(fields, option=orjson.OPT_SORT_KEYS), digest_size=16
    ).digest()


def _unpack(codec: ObjectCodec, packed: bytes) -> dict[str, Any]:
    event: dict[str, Any] = orjson.loads(codec.decode_json(packed))
    return event


class SeriesCache:
    """Remembers recent Events by key and says which API write each occurrence needs.

    Most Events are observed once. Those are kept by generation, as their packed text under
    their key and nothing else: a generation holds the Events first observed within
    :data:`GENERATION` seconds (at most half of ``finish_time``) and is forgotten whole once its
    newest Event is older than ``finish_time``. A second observation moves the Event to the
    series. A single Event is so forgotten 6 to 6.5 minutes after its observation (plus the
    sweep's period, as before), and costs no object and no float of its own.

    Args:
        finish_time: Seconds after which an unobserved series ends (client-go: 6 minutes).
    """

    def __init__(self, *, finish_time: float = FINISH_TIME) -> None:
        self.finish_time = finish_time
        self.codec = ObjectCodec()
        self._series: dict[EventKey, _Cached] = {}
        self._generations: deque[_Generation] = deque()
        self._span = min(GENERATION, finish_time / 2)

    def __len__(self) -> int:
        return len(self._series) + sum(len(g.singles) for g in self._generations)

    def packed_bytes(self) -> int:
        """The bytes of the packed Events kept (what a profile reports)."""
        series = sum(len(cached.packed) for cached in self._series.values())
        return series + sum(len(p) for g in self._generations for p in g.singles.values())

    def observe(self, event: dict[str, Any], now: float, now_text: str) -> EventWrite | None:
        """Records one occurrence of ``event``; returns the write it needs, or None.

        Args:
            event: The Event as it would be created (metadata name and namespace set).
            now: The clock's monotonic time.
            now_text: The clock's wall time as a MicroTime string.

        Returns:
            A create for a new key; a patch of the series for the second occurrence; None for
            later occurrences (their count is written by :meth:`finish` or :meth:`refresh`).
        """
        key = event_key(event)
        cached = self._series.get(key)
        if cached is not None:
            cached.count += 1
            cached.last_observed = now
            cached.last_observed_text = now_text
            return None
        for generation in self._generations:
            packed = generation.singles.pop(key, None)
            if packed is not None:
                cached = self._series[key] = _Cached(packed, 2, now, now_text)
                return self._series_patch(cached)
        generations = self._generations
        if not generations or now - generations[-1].opened >= self._span:
            generations.append(_Generation(now))
        generation = generations[-1]
        generation.last_added = now
        packed = generation.singles[key] = self.codec.encode(event)
        meta = event["metadata"]
        return EventWrite(
            verb="create", namespace=meta["namespace"], name=meta["name"],
            packed=packed, codec=self.codec,
        )  # fmt: skip

    def finish(self, now: float) -> list[EventWrite]:
        """Ends the series (and forgets the single events) not observed for ``finish_time``.

        Returns:
            The final patch of each ended series.
        """
        writes: list[EventWrite] = []
        for key, cached in list(self._series.items()):
            if now - cached.last_observed > self.finish_time:
                writes.append(self._series_patch(cached))
                del self._series[key]
        self.forget_singles(now)
        return writes

    def forget_singles(self, now: float) -> None:
        """Forgets the generations of single events whose newest is older than ``finish_time``."""
        generations = self._generations
        while generations and now - generations[0].last_added > self.finish_time:
            generations.popleft()

    def refresh(self) -> list[EventWrite]:
        """Returns a patch with the current count of every live series."""
        return [self._series_patch(c) for c in self._series.values()]
    def _series_patch(self, cached: _Cached) -> EventWrite:
        meta = _unpack(self.codec, cached.packed)["metadata"]
        return EventWrite(
            verb="patch",
            namespace=meta["namespace"],
            name=meta["name"],
            packed=cached.packed,
            codec=self.codec,
            series={"count": cached.count, "lastObservedTime": cached.last_observed_text},
        )
