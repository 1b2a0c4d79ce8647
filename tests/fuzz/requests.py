"""Generated malformed and oversized requests for the embedded API server.

Paths start from real ones (core and grouped, namespaced and cluster-scoped, collections,
objects, subresources) and are bent; query parameters are the ones kube-apiserver reads, with
values that parse and values that do not; bodies are JSON, YAML, protobuf and garbage, whole,
truncated, deep or huge; Content-Type and Accept cover every type the server knows and some it
does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import orjson
from hypothesis import strategies as st

from rayop.sim.apiserver.request_body import MAX_BODY_BYTES

from .objects import KINDS, base

__all__ = ["FuzzRequest", "fuzzed_requests"]


@dataclass
class FuzzRequest:
    """One request to send."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None

    @property
    def watch(self) -> bool:
        return self.method == "GET" and self.query.get("watch") in ("1", "true", "True")


_PATHS = [
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/p0",
    "/api/v1/namespaces/default/pods/p0/status",
    "/api/v1/namespaces/default/pods/p0/log",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/c0",
    "/api/v1/namespaces/default/services/s0/proxy/x",
    "/api/v1/pods",
    "/api/v1/namespaces",
    "/api/v1/namespaces/default",
    "/api/v1/nodes",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/batch/v1/namespaces/default/jobs",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases/l0",
    "/apis/ray.io/v1/namespaces/default/rayclusters",
    "/apis/ray.io/v1/namespaces/default/rayclusters/raycluster-sample",
    "/apis/ray.io/v1/namespaces/default/rayclusters/raycluster-sample/status",
    "/apis/ray.io/v1/namespaces/default/rayjobs",
    "/apis/ray.io/v1/namespaces/default/rayservices",
    "/apis/ray.io/v1/rayclusters",
    "/apis/ray.io/v1alpha1/namespaces/default/rayclusters",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis",
    "/api",
    "/version",
    "/openapi/v2",
    "/apis/ray.io",
    "/apis/ray.io/v1",
]
_SEGMENTS = st.sampled_from(
    ["", "..", ".", "%00", "%2F", "x" * 300, "namespaces", "status", "scale", "finalize",
     "\u00e9", "%ZZ", "*", "pods", "default", "v1", "proxy", "exec", "watch", "-"]
)


@st.composite
def _path(draw: st.DrawFn) -> str:
    path = draw(st.sampled_from(_PATHS))
    how = draw(st.sampled_from(["keep", "keep", "append", "replace", "cut", "long", "slash"]))
    parts = path.split("/")
    if how == "append":
        parts += draw(st.lists(_SEGMENTS, min_size=1, max_size=4))
    elif how == "replace":
        i = draw(st.integers(1, len(parts) - 1))
        parts[i] = draw(_SEGMENTS)
    elif how == "cut":
        parts = parts[: draw(st.integers(1, len(parts)))]
    elif how == "long":
        parts.append("a" * draw(st.sampled_from([253, 254, 1000, 6000])))
    elif how == "slash":
        parts.insert(draw(st.integers(1, len(parts))), "")
    return "/".join(parts) or "/"


_INTS = st.one_of(
    st.integers(-5, 5).map(str),
    st.sampled_from(["", "abc", "1.5", "nan", "inf", "-inf", "1e3", "0x10", " 1", "9" * 30,
                     "9223372036854775808", "-9223372036854775809", "\u0661"]),
)
_SELECTORS = st.one_of(
    st.sampled_from(["a=b", "a in (x,y)", "!a", "a notin (x)", "a in (", "===", "a!=", ",,",
                     "metadata.name=p0", "spec.nodeName=", "status.phase!=Running",
                     "spec.bogus=1", "a=" + "x" * 1000, "a,b,c", "a b", "a==b==c"]),
    st.text(max_size=30),
)
_RVS = st.one_of(st.sampled_from(["", "0", "1", "-1", "abc", "99999999999", "1.5"]), _INTS)
_QUERY = {
    "watch": st.sampled_from(["true", "1", "false", "yes", ""]),
    "resourceVersion": _RVS,
    "resourceVersionMatch": st.sampled_from(["", "Exact", "NotOlderThan", "Bogus"]),
    "timeoutSeconds": _INTS,
    "limit": _INTS,
    "continue": st.one_of(st.sampled_from(["", "garbage", "eyJ4IjoxfQ==", "e30="]),
                          st.text(max_size=20)),
    "labelSelector": _SELECTORS,
    "fieldSelector": _SELECTORS,
    "allowWatchBookmarks": st.sampled_from(["true", "false", "x"]),
    "sendInitialEvents": st.sampled_from(["true", "false", "x"]),
    "gracePeriodSeconds": _INTS,
    "propagationPolicy": st.sampled_from(["Orphan", "Background", "Foreground", "Bogus", ""]),
    "dryRun": st.sampled_from(["All", "bogus", ""]),
    "fieldValidation": st.sampled_from(["Strict", "Warn", "Ignore", "Bogus", ""]),
    "includeObject": st.sampled_from(["None", "Object", "Metadata", "x"]),
    "orphanDependents": st.sampled_from(["true", "false", "x"]),
    "pretty": st.sampled_from(["true", "x"]),
}
_CTYPES = st.sampled_from(
    ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
     "application/merge-patch+json", "application/json-patch+json",
     "application/strategic-merge-patch+json", "application/apply-patch+yaml",
     "text/html", "text/plain; charset=utf-8", "multipart/form-data", "", ";;;", "application/json; charset=ebcdic"]
)
_ACCEPTS = st.sampled_from(
    ["", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
     "application/json;as=Table;v=v1;g=meta.k8s.io", "application/vnd.kubernetes.protobuf;q=abc",
     "text/html", "*/*", "application/*;q=0", "garbage/", ",,,", "application/json;q=2"]
)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=20))
_JSON = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=15,
)


def _objects() -> list[bytes]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p0"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    found = [orjson.dumps(pod), orjson.dumps({"metadata": {"name": "c0"}, "data": {"a": "b"}})]
    found += [orjson.dumps(base(kind)) for kind in KINDS]
    return found


@st.composite
def _body(draw: st.DrawFn) -> bytes | None:
    how = draw(st.sampled_from(
        ["none", "object", "truncated", "json", "yaml", "protobuf", "binary", "deep", "huge",
         "aliases", "patch"]
    ))
    objects = _objects()
    if how == "none":
        return None
    if how == "object":
        return draw(st.sampled_from(objects))
    if how == "truncated":
        raw = draw(st.sampled_from(objects))
        return raw[: draw(st.integers(0, len(raw) - 1))]
    if how == "json":
        return json.dumps(draw(_JSON)).encode()  # Python's json: integers past 64 bits too
    if how == "yaml":
        return draw(st.sampled_from(
            [b"a: [1, 2", b"- a\n- b: c\n", b"!!python/object:os.system {}", b"key: !!binary x",
             b"a: b\n\tc: d", b"%YAML 9.9\n---\na: 1", b"metadata: {name: y0}\nspec: 5"]
        ))
    if how == "protobuf":
        return b"k8s\x00" + draw(st.binary(max_size=200))
    if how == "binary":
        return draw(st.binary(max_size=500))
    if how == "deep":
        depth = draw(st.sampled_from([50, 99, 101, 500, 5000, 200_000]))
        return b'{"a":' * depth + b"1" + b"}" * depth
    if how == "huge":
        size = draw(st.sampled_from([MAX_BODY_BYTES - 100, MAX_BODY_BYTES + 1, 4 * MAX_BODY_BYTES]))
        return b'{"metadata":{"name":"h0","annotations":{"a":"' + b"x" * size + b'"}}}'
    if how == "aliases":
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x]"]
        for i in range(1, draw(st.integers(2, 9))):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 8) + "]")
        return "\n".join(lines).encode()
    return draw(st.sampled_from(
        [b'[{"op": "add", "path": "/metadata/labels/a", "value": "b"}]', b'[{"op": "bogus"}]',
         b'[{"op": "remove", "path": "/spec"}]', b'{"metadata": null}', b'{"spec": 5}',
         b'[{"op": "replace", "path": "/metadata", "value": 5}]', b"[]", b"{}",
         b'[{"op": "move", "from": "/spec", "path": "/spec/x"}]']
    ))


@st.composite
def fuzzed_requests(draw: st.DrawFn) -> FuzzRequest:
    """One request: method, bent path, odd query, odd headers, odd body."""
    method = draw(st.sampled_from(["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]))
    names = draw(st.lists(st.sampled_from(sorted(_QUERY)), max_size=5, unique=True))
    query = {name: draw(_QUERY[name]) for name in names}
    headers = {"Content-Type": draw(_CTYPES)}
    accept = draw(_ACCEPTS)
    if accept:
        headers["Accept"] = accept
    body = draw(_body()) if method in ("POST", "PUT", "PATCH", "DELETE") else None
    return FuzzRequest(method, draw(_path()), query, headers, body)
