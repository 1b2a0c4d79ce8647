"""The controller machinery knows no particular operator: no Ray group, label or name in it."""

from __future__ import annotations

import re
from pathlib import Path

import rayop.runtime

FORBIDDEN = re.compile(r"ray\.io|kuberay", re.IGNORECASE)


def test_no_runtime_module_names_ray_or_kuberay() -> None:
    root = Path(rayop.runtime.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 20
    hits = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in modules
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert hits == [], "runtime must stay operator-neutral:\n" + "\n".join(hits)
