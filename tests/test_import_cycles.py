"""No two modules of rayop import each other, directly or round a longer loop, counting every
import: module-level, deferred (inside a function) and under ``TYPE_CHECKING``.

A deferred import hides a cycle from Python but not from the reader: the two modules still
depend on each other. grimp (installed with import-linter) reads every import statement.
"""

from __future__ import annotations

import graphlib

import grimp


def test_no_import_cycle_in_rayop() -> None:
    graph = grimp.build_graph("rayop", cache_dir=None)
    imports = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    try:
        graphlib.TopologicalSorter(imports).prepare()
    except graphlib.CycleError as exc:
        cycle = " -> ".join(exc.args[1])
        raise AssertionError(f"import cycle (deferred imports counted): {cycle}") from None
