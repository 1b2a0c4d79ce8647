"""Every package's ``__init__`` docstring maps the package, and the map stays true.

The convention: a package's map is the set of bullet lines in its ``__init__`` docstring that
start with a dash and one or more names in double backticks, then a colon::

    - ``reconciler``: one pass as ordered steps.
    - ``command``, ``env``: what the pod builders add to containers.

The names listed must be exactly the package's modules (``*.py`` other than ``__init__`` and
``__main__``) and subpackages (directories with an ``__init__.py``). Every package with two
members or more has a map; a package with one member may have one. Generated packages
(``proto``, ``openapi_proto``) are exempt from having a map of their own, not from being listed
in their parent's. docs/naming.md says how modules and packages are named.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rayop"
GENERATED = {"proto", "openapi_proto"}
MAP_LINE = re.compile(r"^\s*- ((?:``\w+``(?:, | and )?)+):", re.MULTILINE)


def packages() -> list[Path]:
    return sorted(
        init.parent for init in SRC.rglob("__init__.py") if init.parent.name not in GENERATED
    )


def members(package: Path) -> set[str]:
    """The package's modules and subpackages, by name."""
    found = set()
    for path in package.iterdir():
        if path.suffix == ".py" and path.name not in {"__init__.py", "__main__.py"}:
            found.add(path.stem)
        elif path.is_dir() and (path / "__init__.py").exists():
            found.add(path.name)
    return found


def listed(package: Path) -> set[str]:
    """The names the package's ``__init__`` docstring lists in its map."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    names: set[str] = set()
    for line in MAP_LINE.finditer(doc):
        names |= set(re.findall(r"``(\w+)``", line.group(1)))
    return names


def _id(package: Path) -> str:
    return package.relative_to(SRC.parent).as_posix()


@pytest.mark.parametrize("package", packages(), ids=_id)
def test_the_package_map_lists_exactly_its_members(package: Path) -> None:
    actual, mapped = members(package), listed(package)
    if len(actual) < 2 and not mapped:
        return  # one module or none: nothing to map
    assert {"not listed": sorted(actual - mapped), "not there": sorted(mapped - actual)} == {
        "not listed": [],
        "not there": [],
    }


def test_the_map_convention_reads_both_forms() -> None:
    doc = '"""Pkg.\n\n- ``a``: one.\n- ``b``, ``c``: two.\n- ``d`` without a colon is no map line.\n"""'
    tree = ast.parse(doc)
    text = ast.get_docstring(tree) or ""
    names = {n for m in MAP_LINE.finditer(text) for n in re.findall(r"``(\w+)``", m.group(1))}
    assert names == {"a", "b", "c"}
