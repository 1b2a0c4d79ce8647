"""Metadata-only responses: ``PartialObjectMetadata`` and ``PartialObjectMetadataList``.

A client that needs only objects' metadata asks for it in its Accept header, as kube-apiserver
serves for every resource, built-in or custom: ``application/json;as=PartialObjectMetadataList;
g=meta.k8s.io;v=v1`` on a list, ``as=PartialObjectMetadata`` on a get or a watch (client-go's
metadata client and controller-runtime's metadata-only watches send these). Each object is then
``{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {...}}``: no
spec, no status. The clauses of the header are tried best quality first; this plane encodes the
metadata forms as JSON only, so a clause asking for them in protobuf is passed over for the next
one (client-go puts its JSON clause right after the protobuf one). Asking for the list form of
one object, or the object form of a list, is refused as kube-apiserver refuses it (406; see
:func:`check_form` for its one 500).
"""

from __future__ import annotations

from typing import Final, Literal

from rayop.apimachinery.objects import Obj
from rayop.sim.apiserver.negotiation import accept_clauses
from rayop.sim.machinery import errors as se

__all__ = ["LIST", "OBJECT", "Form", "check_form", "metadata_list", "partial", "requested"]

OBJECT: Final = "PartialObjectMetadata"
LIST: Final = "PartialObjectMetadataList"
Form = Literal["PartialObjectMetadata", "PartialObjectMetadataList"]

_GROUP = "meta.k8s.io"
_VERSIONS = ("v1", "v1beta1")
_JSON = ("application/json", "*/*", "application/*")


def requested(accept: str) -> tuple[Form, str] | None:
    """Returns the metadata form the best acceptable clause of ``accept`` asks for, with its
    ``apiVersion`` (``meta.k8s.io/v1``...); None when that clause asks for whole objects (or a
    Table, or another transform the caller serves).

    Raises:
        StatusError: 406 when every clause asks for a metadata form in an encoding this plane
            does not write (protobuf).
    """
    passed_over = False
    for media, params in accept_clauses(accept):
        form = params.get("as")
        if form not in (OBJECT, LIST):
            return None
        if params.get("g") != _GROUP or params.get("v") not in _VERSIONS:
            return None  # another group's kind of that name: not a transform served here
        if media in _JSON:
            return (OBJECT if form == OBJECT else LIST), f"{_GROUP}/{params['v']}"
        passed_over = True
    if passed_over:
        raise se.StatusError(
            se.status_body(
                406,
                "NotAcceptable",
                "only the following media types are accepted for PartialObjectMetadata: "
                "application/json",
            )
        )
    return None


def check_form(form: Form, *, listing: bool, custom: bool = False) -> None:
    """Refuses the list form for one object and the object form for a list (406; the list
    form of one custom resource is kube-apiserver's 500 "content is not a list", as it answers
    for the unstructured objects it serves custom resources as).

    Raises:
        StatusError: 406 naming the mismatch (500 for one custom resource in the list form).
    """
    if listing and form == OBJECT:
        raise se.StatusError(
            se.status_body(
                406, "NotAcceptable",
                "you requested PartialObjectMetadata, but the requested object is a list",
            )
        )  # fmt: skip
    if not listing and form == LIST and custom:
        raise se.StatusError(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": "content is not a list", "code": 500}
        )  # fmt: skip
    if not listing and form == LIST:
        raise se.StatusError(
            se.status_body(
                406, "NotAcceptable",
                "you requested PartialObjectMetadataList, but the requested object is not a list",
            )
        )  # fmt: skip


def partial(obj: Obj, api_version: str) -> Obj:
    """Returns ``obj`` as a ``PartialObjectMetadata`` (its metadata, shared, not copied)."""
    return {"kind": OBJECT, "apiVersion": api_version, "metadata": obj.get("metadata") or {}}


def metadata_list(items: list[Obj], meta: Obj, api_version: str) -> Obj:
    """Returns a ``PartialObjectMetadataList`` of ``items`` with the list's ``meta``."""
    return {
        "kind": LIST,
        "apiVersion": api_version,
        "metadata": meta,
        "items": [partial(o, api_version) for o in items],
    }
