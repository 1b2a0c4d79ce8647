"""How the small controllers open a pass: gone, being deleted, managed by another, behind our
own write, parse. :class:`Opening` is the rule, written once.

The ``networkpolicy``, ``raycluster-mtls`` and ``raycronjob`` passes all start with
:meth:`Opening.open` and continue only with an :class:`Opened` object:

1. not in the cache: nothing to do (``Result()``);
2. being deleted: nothing to do, garbage collection removes what it owns; a controller whose
   KubeRay counterpart does not look at deletion says ``skip_deleting=False`` (RayCronJob);
3. ``spec.managedBy`` names another controller: nothing to do (a kind without the field never
   has it set);
4. the cache predates this controller's own last write of it: look again in ``behind_requeue``
   seconds, if set (the tracker enqueues it the moment the cache catches up);
5. parse once: a spec that does not parse comes back as :class:`Unparsed` with its problems.

The rule for a spec that does not parse, for every controller: the primary controller of the
kind reports it as a validation failure (a Warning event with KubeRay's ``Invalid<Kind>Spec``
reason, the status reason where the kind has one) and does nothing else until the object
changes; a secondary controller of the kind (``networkpolicy``, ``raycluster-mtls``) skips it,
since the primary reports it. The three large controllers (RayCluster, RayJob, RayService)
open their passes with ordered steps of their own, because KubeRay orders managedBy, deletion
(finalizers to remove) and validation differently for each; they follow the same rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rayop.api.common import MANAGED_BY_KUBERAY
from rayop.api.validation.problem import Problem
from rayop.runtime.informers.cache_reader import CacheReader
from rayop.runtime.own_writes import OwnWrites
from rayop.runtime.reconcile import Request, Result

__all__ = ["Opened", "Opening", "Unparsed"]

ModelT = TypeVar("ModelT")


@dataclass(frozen=True, slots=True)
class Opened(Generic[ModelT]):
    """A pass that goes on: the object as cached and parsed once."""

    cached: Mapping[str, Any]
    model: ModelT


@dataclass(frozen=True, slots=True)
class Unparsed:
    """The object's spec does not parse; ``problems`` says why, one per field."""

    cached: Mapping[str, Any]
    problems: list[Problem]


@dataclass(frozen=True, slots=True, kw_only=True)
class Opening(Generic[ModelT]):
    """The opening of one controller's passes (see the module docstring for the rule).

    Attributes:
        cache: The cache of the controller's kind.
        parse: Parses the cached wire JSON.
        own_writes: The tracker of this controller's own writes of the kind; None: it writes
            none (only objects it owns).
        skip_deleting: An object being deleted ends the pass (False: KubeRay's controller of
            this kind does not look at deletion, so neither does this one).
        behind_requeue: Seconds to look again while the cache is behind an own write (None:
            only when the tracker enqueues it on catch-up).
    """

    cache: CacheReader
    parse: Callable[[Mapping[str, Any]], tuple[ModelT | None, list[Problem]]]
    own_writes: OwnWrites | None = None
    skip_deleting: bool = True
    behind_requeue: float | None = None

    def open(self, request: Request) -> Opened[ModelT] | Unparsed | Result:
        """Returns the parsed object, why it does not parse, or the Result that ends the pass."""
        cached = self.cache.get(request.namespace or None, request.name)
        if cached is None:
            return Result()
        meta = cached.get("metadata") or {}
        if self.skip_deleting and meta.get("deletionTimestamp"):
            return Result()
        managed_by = (cached.get("spec") or {}).get("managedBy")
        if managed_by and managed_by != MANAGED_BY_KUBERAY:
            return Result()
        if self.own_writes is not None and self.own_writes.cache_behind(cached):
            return Result(requeue_after=self.behind_requeue)
        model, problems = self.parse(cached)
        if model is None:
            return Unparsed(cached, problems)
        return Opened(cached, model)
