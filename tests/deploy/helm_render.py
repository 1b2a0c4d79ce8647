"""Renders helm/rayop without helm: just the template constructs the chart uses, strictly.

No helm binary is available from this machine's package registries, so the chart's templates
are kept simple and rendered here. Supported, with Go template semantics:

- ``{{- ... -}}`` whitespace trimming and ``{{/* comments */}}``;
- ``{{ if PIPELINE }} ... {{ else }} ... {{ end }}`` (nested), truthiness as in Go
  (false, 0, "", nil, empty list or map are false);
- pipelines ``A | f x | g`` whose terms are ``.Values.a.b``, ``.Release.Name``,
  ``.Release.Namespace``, ``.Release.Service``, ``.Chart.Name``, ``.Chart.Version``,
  ``.Chart.AppVersion``, ``.`` and string or integer literals, with the functions
  ``toYaml``, ``nindent``, ``indent``, ``quote``, ``default``, ``join`` and ``include``.

``include`` uses :data:`HELPERS`, a fixed Python mapping of the ``define`` blocks of
``templates/_helpers.tpl`` (a test checks both name the same helpers). Anything else, a missing
value included, raises :class:`TemplateError`, so a template using an unsupported construct
fails its test instead of rendering wrongly.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "helm" / "rayop"

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)


class TemplateError(Exception):
    """A template uses a construct or a value this renderer does not know."""


@dataclass(frozen=True)
class Context:
    """The ``.`` of a template: values, release and chart."""

    values: Mapping[str, Any]
    release: Mapping[str, Any]
    chart: Mapping[str, Any]


def _fullname(ctx: Context) -> str:
    return str(ctx.values.get("fullnameOverride") or ctx.release["Name"])[:63].rstrip("-")


def _labels(ctx: Context) -> str:
    chart = ctx.chart
    return "\n".join(
        [
            f"app.kubernetes.io/name: {chart['name']}",
            f"app.kubernetes.io/instance: {ctx.release['Name']}",
            f'app.kubernetes.io/version: "{chart["appVersion"]}"',
            f"app.kubernetes.io/managed-by: {ctx.release['Service']}",
            f"helm.sh/chart: {chart['name']}-{chart['version']}",
        ]
    )


def _selector_labels(ctx: Context) -> str:
    return "\n".join(
        [
            f"app.kubernetes.io/name: {ctx.chart['name']}",
            f"app.kubernetes.io/instance: {ctx.release['Name']}",
            "app.kubernetes.io/component: operator",
        ]
    )


def _service_account_name(ctx: Context) -> str:
    account = ctx.values["serviceAccount"]
    if account["create"]:
        return str(account.get("name") or _fullname(ctx))
    return str(account.get("name") or "default")


def _feature_gates(ctx: Context) -> str:
    return ",".join(f"{g['name']}={go_str(bool(g['enabled']))}" for g in ctx.values["featureGates"])


HELPERS: dict[str, Callable[[Context], str]] = {
    "rayop.fullname": _fullname,
    "rayop.labels": _labels,
    "rayop.selectorLabels": _selector_labels,
    "rayop.serviceAccountName": _service_account_name,
    "rayop.featureGates": _feature_gates,
}
"""What each ``define`` of _helpers.tpl renders to, written in Python."""


def go_str(value: Any) -> str:
    """Formats a scalar as Go's ``{{ value }}`` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return str(int(value))
    if isinstance(value, str | int | float):
        return str(value)
    raise TemplateError(f"cannot print {value!r} directly (use toYaml)")


def _truthy(value: Any) -> bool:
    return bool(value)


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=True, default_flow_style=False).rstrip("\n")


def _indent(width: int, text: str) -> str:
    pad = " " * width
    return "\n".join(pad + line for line in text.split("\n"))


class _Template:
    def __init__(self, source: str, name: str) -> None:
        self.name = name
        self.parts = self._split(source)

    @staticmethod
    def _split(source: str) -> list[tuple[str, str]]:
        """Returns ("text", s) and ("action", s) parts with Go's trim markers applied."""
        parts: list[tuple[str, str]] = []
        pos, trim_next = 0, False
        for match in _ACTION.finditer(source):
            text = source[pos : match.start()]
            if trim_next:
                text = text.lstrip()
            if match.group(1):
                text = text.rstrip()
            parts.append(("text", text))
            action = match.group(2).strip()
            if not (action.startswith("/*") and action.endswith("*/")):
                parts.append(("action", action))
            trim_next, pos = bool(match.group(3)), match.end()
        tail = source[pos:]
        parts.append(("text", tail.lstrip() if trim_next else tail))
        return parts

    def render(self, ctx: Context) -> str:
        out: list[str] = []
        end = self._block(0, ctx, out, emit=True)
        if end != len(self.parts):
            raise TemplateError(f"{self.name}: unexpected {self.parts[end][1]!r}")
        return "".join(out)

    def _block(self, index: int, ctx: Context, out: list[str], *, emit: bool) -> int:
        """Renders parts from ``index`` until an unmatched else/end; returns that index."""
        while index < len(self.parts):
            kind, body = self.parts[index]
            if kind == "text":
                if emit:
                    out.append(body)
                index += 1
            elif body in ("else", "end"):
                return index
            elif body.startswith("if "):
                cond = emit and _truthy(self._pipeline(body[3:], ctx))
                index = self._block(index + 1, ctx, out, emit=cond)
                if self.parts[index][1] == "else":
                    index = self._block(index + 1, ctx, out, emit=emit and not cond)
                if index >= len(self.parts) or self.parts[index][1] != "end":
                    raise TemplateError(f"{self.name}: `if {body[3:]}` has no end")
                index += 1
            else:
                if emit:
                    out.append(go_str(self._pipeline(body, ctx)))
                index += 1
        return index

    def _pipeline(self, expression: str, ctx: Context) -> Any:
        commands = [shlex.split(c, posix=True) for c in expression.split("|")]
        value: Any = _NOTHING
        for words in commands:
            if not words:
                raise TemplateError(f"{self.name}: empty command in {expression!r}")
            head, args = words[0], [self._term(w, ctx) for w in words[1:]]
            if value is not _NOTHING:
                args.append(value)
            if head in _FUNCTIONS:
                value = self._call(head, args)
            elif args:
                raise TemplateError(f"{self.name}: unknown function {head!r}")
            else:
                value = self._term(head, ctx)
        return value

    def _term(self, word: str, ctx: Context) -> Any:
        if word == ".":
            return ctx
        if word.isdigit():
            return int(word)
        if not word.startswith("."):
            return word  # a string literal (the quotes were removed by shlex)
        root, *path = word[1:].split(".")
        sources: dict[str, Mapping[str, Any]] = {
            "Values": ctx.values,
            "Release": ctx.release,
            "Chart": {k[0].upper() + k[1:]: v for k, v in ctx.chart.items()},
        }
        if root not in sources:
            raise TemplateError(f"{self.name}: unknown object {word!r}")
        value: Any = sources[root]
        for key in path:
            if not isinstance(value, Mapping) or key not in value:
                raise TemplateError(f"{self.name}: {word} is not set")
            value = value[key]
        return value

    def _call(self, name: str, args: list[Any]) -> Any:
        try:
            return _FUNCTIONS[name](*args)
        except TypeError as err:
            raise TemplateError(f"{self.name}: bad arguments to {name}: {args!r}") from err


_NOTHING = object()


def _include(name: str, ctx: Context) -> str:
    if name not in HELPERS:
        raise TemplateError(f"include of unknown helper {name!r}")
    return HELPERS[name](ctx)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "toYaml": _to_yaml,
    "nindent": lambda width, text: "\n" + _indent(width, text),
    "indent": _indent,
    "quote": lambda value: '"' + go_str(value).replace('"', '\\"') + '"',
    "default": lambda fallback, value: value if _truthy(value) else fallback,
    "join": lambda sep, items: sep.join(go_str(i) for i in items),
    "include": _include,
}


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def values(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Returns the chart's values.yaml merged with ``overrides`` (as ``helm --set`` would)."""
    base = yaml.safe_load((CHART / "values.yaml").read_text())
    return _merge(base, overrides or {})


def render_chart(
    overrides: Mapping[str, Any] | None = None,
    *,
    release: str = "rayop",
    namespace: str = "rayop-system",
) -> dict[str, str]:
    """Renders every template (not ``_*.tpl``) and returns ``{template file name: text}``."""
    ctx = Context(
        values=values(overrides),
        release={"Name": release, "Namespace": namespace, "Service": "Helm"},
        chart=yaml.safe_load((CHART / "Chart.yaml").read_text()),
    )
    return {
        path.name: _Template(path.read_text(), path.name).render(ctx)
        for path in sorted((CHART / "templates").glob("*.yaml"))
    }


def render_manifests(
    overrides: Mapping[str, Any] | None = None,
    *,
    release: str = "rayop",
    namespace: str = "rayop-system",
) -> list[dict[str, Any]]:
    """Renders the chart and returns its objects (CRDs excluded), as helm template would."""
    docs: list[dict[str, Any]] = []
    for text in render_chart(overrides, release=release, namespace=namespace).values():
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def render_text(source: str, overrides: Mapping[str, Any] | None = None) -> str:
    """Renders one template string with the chart's values (for tests of the renderer)."""
    ctx = Context(
        values=values(overrides),
        release={"Name": "rayop", "Namespace": "rayop-system", "Service": "Helm"},
        chart=yaml.safe_load((CHART / "Chart.yaml").read_text()),
    )
    return _Template(source, "<string>").render(ctx)
