"""The options of LIST and WATCH calls, defined once for the client and for whatever takes one.

:meth:`rayop.kube.client.KubeClient.list`, ``list_pages`` and ``watch`` take these as keyword
arguments (``**options: Unpack[ListOptions]``), and so do the protocols that code written against
any client declares (the informers' reflector, test fakes), so the option set and its meaning are
written here only. Every key may be left out; the defaults are given per key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict

DEFAULT_PAGE_SIZE = 500
"""The page size of a LIST that gives no ``limit``."""


class Selection(TypedDict, total=False):
    """Which objects a LIST or WATCH covers."""

    namespace: str | None
    """One namespace; None (the default) for all namespaces."""
    label_selector: str | None
    """A label selector such as ``"app=x,tier in (a,b)"``; None for every label."""
    field_selector: str | None
    """A field selector such as ``"status.phase=Running"``; None for every object."""


class ListOptions(Selection, total=False):
    """The options of a LIST."""

    resource_version: str | None
    """``"0"`` to accept any cached state, a version to list at; None (the default): the latest."""

    limit: int | None
    """Page size (default :data:`DEFAULT_PAGE_SIZE`); None or 0 asks for everything at once."""
    metadata_only: bool
    """Items carry only ``metadata`` (default False): the server answers with a
    ``PartialObjectMetadataList`` of ``PartialObjectMetadata`` items, no spec, no status, as
    kube-apiserver serves for any resource (Accept ``application/json;as=
    PartialObjectMetadataList;g=meta.k8s.io;v=v1``); a server that cannot answers 406."""


class WatchOptions(Selection, total=False):
    """The options of a WATCH."""

    resource_version: str | None
    """The version to watch from (``"0"``: any, with synthetic ADDEDs); None: from now."""
    timeout_seconds: int | None
    """Seconds after which the server ends the watch; None (the default) for its own limit."""
    allow_bookmarks: bool
    """Ask for BOOKMARK events (default True)."""


PropagationPolicy = Literal["Background", "Foreground", "Orphan"]
"""What happens to the dependents of a deleted object."""


class DeleteOptions(TypedDict, total=False):
    """The options of a DELETE of one object."""

    propagation_policy: PropagationPolicy | None
    """Background, Foreground or Orphan; None (the default) for the resource's default."""
    grace_period_seconds: int | None
    """Seconds before the object is removed (pods); None for its own grace period."""
    preconditions: Mapping[str, str] | None
    """``{"uid": ..., "resourceVersion": ...}`` that must still hold, or the delete conflicts."""


def delete_body(options: DeleteOptions) -> dict[str, Any] | None:
    """Returns the ``DeleteOptions`` body ``options`` ask for; None when they ask for nothing."""
    body: dict[str, Any] = {}
    if options.get("propagation_policy") is not None:
        body["propagationPolicy"] = options["propagation_policy"]
    if options.get("grace_period_seconds") is not None:
        body["gracePeriodSeconds"] = options["grace_period_seconds"]
    if options.get("preconditions"):
        body["preconditions"] = dict(options["preconditions"] or {})
    if not body:
        return None
    return {"kind": "DeleteOptions", "apiVersion": "v1", **body}


def selection(
    namespace: str | None, label_selector: str | None, field_selector: str | None
) -> Selection:
    """Returns the options naming one namespace (or all) and the selectors; never blocks."""
    return {
        "namespace": namespace,
        "label_selector": label_selector,
        "field_selector": field_selector,
    }


def query(options: Selection, resource_version: str | None = None) -> dict[str, str]:
    """Returns the query parameters of the selectors in ``options`` and of ``resource_version``."""
    params: Mapping[str, str | None] = {
        "labelSelector": options.get("label_selector"),
        "fieldSelector": options.get("field_selector"),
        "resourceVersion": resource_version,
    }
    return {key: value for key, value in params.items() if value is not None}
