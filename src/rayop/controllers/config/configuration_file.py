"""Reads a KubeRay ``--config`` file into a :class:`~.configuration.Configuration`, or says where
it is wrong.

The file is YAML (JSON is YAML too), one document. PyYAML's composer keeps the line and column of
every node, so each problem, whether the YAML does not parse, a field is unknown or of the wrong
type (pydantic, strict) or a value would make pods Kubernetes refuses
(:mod:`.configuration_checks`), is reported as ``<file>:<line>:<column>: <field path>:
<message>``, all of them at once. Nothing of a file with a problem is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rayop.controllers.config.configuration import API_VERSION, KIND, Configuration
from rayop.controllers.config.configuration_checks import configuration_problems

__all__ = ["ConfigurationError", "ConfigurationIssue", "load_configuration", "parse_configuration"]

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class ConfigurationIssue:
    """One problem of a configuration file: its place and what is wrong."""

    line: int
    """1-based line (of the field, or of the nearest enclosing node that exists)."""
    column: int
    """1-based column."""
    field: str
    """The field path, e.g. ``headSidecarContainers[0].name``; empty for the whole file."""
    message: str

    def render(self, path: str) -> str:
        """Returns ``<path>:<line>:<column>: <field>: <message>``."""
        where = f"{path}:{self.line}:{self.column}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


class ConfigurationError(ValueError):
    """A configuration file that cannot be used; ``str()`` lists every problem with its line."""

    def __init__(self, path: str, issues: Sequence[ConfigurationIssue]) -> None:
        self.path = path
        self.issues = tuple(sorted(issues, key=lambda i: (i.line, i.column)))
        super().__init__("; ".join(issue.render(path) for issue in self.issues))


def field_path(loc: Loc) -> str:
    """Returns a pydantic location as a field path: ``a.b[0].c``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _node_at(root: yaml.Node, loc: Loc) -> yaml.Node:
    """Returns the node ``loc`` points at (the key, for a mapping entry), or the deepest node on
    the way that exists."""
    node = root
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            match = next((kv for kv in node.value if kv[0].value == part), None)
            if match is None:
                return node
            key, value = match
            node = key if last else value
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return node
            node = node.value[part]
        else:
            return node
    return node


def _issue(root: yaml.Node | None, loc: Loc, message: str) -> ConfigurationIssue:
    node = _node_at(root, loc) if root is not None else None
    mark = node.start_mark if node is not None else None
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return ConfigurationIssue(line, column, field_path(loc), message)


def _pydantic_message(error: Any) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "literal_error" and error["loc"] in (("apiVersion",), ("kind",)):
        want = API_VERSION if error["loc"] == ("apiVersion",) else KIND
        return f"must be {want!r}, got {error.get('input')!r}"
    return str(error.get("msg", "invalid"))


def parse_configuration(text: str, *, path: str = "<config>") -> Configuration:
    """Returns the Configuration in ``text`` (KubeRay's defaults applied).

    Raises:
        ConfigurationError: the YAML does not parse, is not one mapping, has an unknown field,
            a value of the wrong type, or a value that would make invalid pods.
    """
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ConfigurationError(path, [ConfigurationIssue(line, column, "", problem)]) from exc
    except yaml.YAMLError as exc:
        raise ConfigurationError(path, [ConfigurationIssue(1, 1, "", str(exc))]) from exc
    docs = [d for d in docs if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], yaml.MappingNode):
        found = (
            f"{len(docs)} documents" if len(docs) != 1 else f"a {getattr(docs[0], 'id', 'node')}"
        )
        node = docs[-1] if docs else None
        raise ConfigurationError(
            path, [_issue(node, (), f"expected one {KIND} mapping, found {found}")]
        )
    root = docs[0]
    data = yaml.SafeLoader("").construct_document(root)
    try:
        config = Configuration.model_validate(data)
    except ValidationError as exc:
        issues = [_issue(root, tuple(e["loc"]), _pydantic_message(e)) for e in exc.errors()]
        raise ConfigurationError(path, issues) from exc
    problems = configuration_problems(config)
    if problems:
        raise ConfigurationError(path, [_issue(root, p.loc, p.message) for p in problems])
    return config.with_defaults()


def load_configuration(path: str | Path) -> Configuration:
    """Reads and parses the configuration file at ``path`` (see :func:`parse_configuration`).

    Raises:
        ConfigurationError: the file cannot be read or is not a valid Configuration.
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            name, [ConfigurationIssue(1, 1, "", f"cannot read: {exc}")]
        ) from exc
    return parse_configuration(text, path=name)
