"""The documentation names only files and modules that exist.

A bare file name may also be one of KubeRay's samples (tests/kuberay_compat.py); without that
material, a doc naming a sample-like file (``ray-*.yaml``) the repository lacks is checked for
everything else, then skipped.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tests import kuberay_compat

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w.\-/]+\.(?:py|yaml|json|md|sh)$|^[\w.\-]+/(?:[\w.\-]+/)*$")
MODULE = re.compile(r"^rayop(?:\.\w+)+$")
SEARCHED = ("src", "tests", "benchmarks", "deploy", "helm", "scripts", "docs", "grafana")
SAMPLE_NAME = re.compile(r"^ray-[\w.\-]+\.yaml$")
"""How KubeRay's sample manifests, which the docs name by file name, are named."""


def _tokens(doc: Path) -> list[str]:
    return [t.split()[0] for t in CODE.findall(doc.read_text()) if t.strip()]


def _path_exists(token: str) -> bool:
    name = token.rstrip("/")
    if token.endswith("/") and "/" not in name:
        found = (p.is_dir() for top in SEARCHED for p in (ROOT / top).rglob(name))
        return (ROOT / name).is_dir() or any(found)
    if "/" in token:
        return any((base / token).exists() for base in (ROOT, ROOT / "src" / "rayop"))
    return any(any((ROOT / top).rglob(token)) for top in SEARCHED)


def _module_exists(token: str) -> bool:
    parts = token.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_named_file_and_module_exists(doc: Path) -> None:
    missing = [
        token
        for token in _tokens(doc)
        if (PATH.match(token) and "<" not in token and not _path_exists(token))
        or (MODULE.match(token) and not _module_exists(token))
    ]
    unchecked: list[str] = []
    if kuberay_compat.present():
        samples = kuberay_compat.samples_dir()
        missing = [t for t in missing if "/" in t or not (samples / t).exists()]
    else:
        unchecked = [t for t in missing if SAMPLE_NAME.match(t)]
        missing = [t for t in missing if not SAMPLE_NAME.match(t)]
    assert not missing, f"{doc.name} names what does not exist: {missing}"
    if unchecked:
        pytest.skip(kuberay_compat.MISSING)
