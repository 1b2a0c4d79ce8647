"""``--audit-log-path``: the audit appends every request to a file, one JSON object a line."""

from __future__ import annotations

import json
from pathlib import Path

from rayop.sim.apiserver.audit import Audit


def test_every_record_is_a_json_line_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    audit = Audit(log_path=path)
    audit.record(verb="get", resource="pods", code=200, namespace="ns", name="p")
    audit.record(
        verb="patch",
        resource="rayclusters",
        group="ray.io",
        code=200,
        namespace="ns",
        name="rc",
        user="system:serviceaccount:ns:rc",
    )
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    audit.close()
    assert [(r["verb"], r["resource"], r["name"]) for r in lines] == [
        ("get", "pods", "p"),
        ("patch", "rayclusters", "rc"),
    ]
    assert lines[1]["user"] == "system:serviceaccount:ns:rc" and lines[1]["group"] == "ray.io"
    assert lines[1]["code"] == 200 and isinstance(lines[1]["time"], float)


def test_without_a_path_nothing_is_written(tmp_path: Path) -> None:
    audit = Audit()
    audit.record(verb="get", resource="pods", code=200)
    assert audit.log_path is None and list(tmp_path.iterdir()) == []
