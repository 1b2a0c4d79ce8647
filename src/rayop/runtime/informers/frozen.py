"""Read-only views of decoded JSON objects, as handed out by informer caches.

Cached objects are shared by every reader, so no reader may change them. :func:`freeze` turns a
decoded JSON value into :class:`FrozenDict` / :class:`FrozenList` trees: subclasses of ``dict``
and ``list`` (so ``isinstance``, ``orjson``, ``json`` and pydantic accept them unchanged and they
cost no more memory than the originals) whose mutating methods raise :class:`TypeError`.
``copy.deepcopy`` (and :func:`thaw`) of a frozen value gives back plain, mutable ``dict`` and
``list`` objects: the usual "copy, edit, update" idiom of a controller keeps working.

:func:`freeze` interns strings, so values repeated across long-lived objects are stored once;
:func:`freeze_json` skips that and is about three times faster, for short-lived decoded copies.
:func:`freeze_decoded` is about twice as fast again, for a value nobody else holds (what
``orjson.loads`` just returned, as on every cache read): it reuses the value's own containers
as scratch instead of building a second tree beside them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, NoReturn


def _readonly(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError("cached objects are read-only; copy.deepcopy() them before editing")


class FrozenDict(dict[str, Any]):
    """A ``dict`` whose mutating methods raise TypeError; deep copies are plain dicts."""

    __slots__ = ()

    __setitem__ = _readonly
    __delitem__ = _readonly
    __ior__ = _readonly
    clear = _readonly
    pop = _readonly
    popitem = _readonly
    setdefault = _readonly
    update = _readonly

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` whose mutating methods raise TypeError; deep copies are plain lists."""

    __slots__ = ()

    __setitem__ = _readonly
    __delitem__ = _readonly
    __iadd__ = _readonly
    __imul__ = _readonly
    append = _readonly
    extend = _readonly
    insert = _readonly
    pop = _readonly
    remove = _readonly
    reverse = _readonly
    sort = _readonly
    clear = _readonly

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def _frozen_list(items: Iterable[Any]) -> FrozenList:
    frozen = FrozenList()
    list.extend(frozen, items)
    return frozen


def freeze(value: Any) -> Any:
    """Returns a deep read-only copy of a decoded JSON value; never blocks.

    Dicts become :class:`FrozenDict`, lists :class:`FrozenList`, strings
    are interned; already-frozen subtrees are shared, not copied.
    """
    if isinstance(value, str):
        return sys.intern(value) if type(value) is str else value
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict(
            {sys.intern(k) if type(k) is str else k: freeze(v) for k, v in value.items()}
        )
    if isinstance(value, list | tuple):
        return _frozen_list(freeze(v) for v in value)
    return value


_new_frozen_dict = FrozenDict.__new__
_init_dict = dict.__init__
_extend_list = list.extend


def freeze_json(value: Any) -> Any:
    """Returns a deep read-only copy of a decoded JSON value, without interning; never blocks.

    Like :func:`freeze` for values made of ``dict``, ``list``, ``tuple`` and scalars (what orjson
    decodes), but strings are not interned. Already-frozen subtrees are shared, not copied.
    """
    kind = type(value)
    if kind is dict:
        return _freeze_dict(value)
    if kind is list or kind is tuple:
        return _freeze_list(value)
    return value


def _freeze_dict(value: dict[str, Any]) -> FrozenDict:
    frozen = _new_frozen_dict(FrozenDict)
    _init_dict(
        frozen,
        {
            k: _freeze_dict(v)
            if type(v) is dict
            else _freeze_list(v)
            if type(v) is list or type(v) is tuple
            else v
            for k, v in value.items()
        },
    )
    return frozen


def _freeze_list(value: list[Any] | tuple[Any, ...]) -> FrozenList:
    frozen = FrozenList()
    _extend_list(
        frozen,
        [
            _freeze_dict(v)
            if type(v) is dict
            else _freeze_list(v)
            if type(v) is list or type(v) is tuple
            else v
            for v in value
        ],
    )
    return frozen


def freeze_decoded(value: Any) -> Any:
    """Returns a read-only tree of a freshly decoded JSON value, consuming it; never blocks.

    The result equals :func:`freeze_json`'s, but ``value``'s dicts and lists have their
    children replaced by the frozen ones on the way, so the caller must hold the only
    reference to ``value`` (and not use it afterwards). Only ``dict`` and ``list`` nodes are
    frozen (orjson decodes no tuples).
    """
    kind = type(value)
    if kind is dict:
        return _consume_dict(value)
    if kind is list:
        return _consume_list(value)
    return value


_update_dict = dict.update


def _consume_dict(value: dict[str, Any]) -> FrozenDict:
    for key, child in value.items():
        kind = type(child)
        if kind is dict:
            value[key] = _consume_dict(child)
        elif kind is list:
            value[key] = _consume_list(child)
    frozen = _new_frozen_dict(FrozenDict)
    _update_dict(frozen, value)
    return frozen


def _consume_list(value: list[Any]) -> FrozenList:
    for index, child in enumerate(value):
        kind = type(child)
        if kind is dict:
            value[index] = _consume_dict(child)
        elif kind is list:
            value[index] = _consume_list(child)
    frozen = FrozenList()
    _extend_list(frozen, value)
    return frozen


def thaw(value: Any) -> Any:
    """Returns a deep mutable copy (plain dicts and lists) of a frozen or plain JSON value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value
