"""docs/performance-data.json and docs/performance.md cannot drift apart, and
benchmarks/plot_report.py draws the report's plots from the data file."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "performance.md"
DATA = ROOT / "docs" / "performance-data.json"
FIGURES = ("time_to_ready_s", "operator_cpu_s", "peak_rss_mb")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
HEADING = re.compile(r"^(#+) (.*)$")


@pytest.fixture
def plot(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("plot_report")


def _points() -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = json.loads(DATA.read_text())["points"]
    return points


def _section(heading: str) -> list[str]:
    """Returns the lines under ``heading`` up to the next heading of any level."""
    lines = DOC.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if (m := HEADING.match(line)) and m[2] == heading]
    assert len(starts) == 1, f"{heading!r} is not one heading of {DOC.name}"
    body: list[str] = []
    for line in lines[starts[0] + 1 :]:
        if HEADING.match(line):
            break
        body.append(line)
    return body


def _tables(lines: list[str]) -> list[list[list[str]]]:
    """Returns each markdown table of ``lines`` as rows of cells, the separator row left out."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in lines:
        if not line.startswith("|"):
            current = None
            continue
        if current is None:
            current = []
            tables.append(current)
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not all(set(c) <= {"-", ":"} for c in cells):
            current.append(cells)
    return tables


def _numbers(cell: str) -> list[float]:
    return [float(n.replace(",", "")) for n in NUMBER.findall(cell)]


def _cited(section: str, table: int, figure: dict[str, Any]) -> float:
    rows = _tables(_section(section))[table]
    column = rows[0].index(figure["column"])
    matches = [r for r in rows[1:] if r[0] == figure["row"]]
    assert len(matches) == 1, f"{section!r} table {table}: row {figure['row']!r}"
    pick: int = figure["pick"]
    return _numbers(matches[0][column])[pick]


@pytest.mark.parametrize("key", FIGURES)
def test_every_figure_of_the_data_file_equals_the_cell_of_the_doc_table_it_cites(key: str) -> None:
    cited = [p for p in _points() if p[key] is not None]
    assert cited, key
    for p in cited:
        figure = p[key]
        assert _cited(p["section"], p["table"], figure) == float(figure["value"]), (p, key)


def test_each_operator_has_a_point_at_every_real_tier_size_and_the_embedded_curve_three() -> None:
    sizes: dict[tuple[str, str], list[int]] = {}
    for p in _points():
        sizes.setdefault((p["operator"], p["plane"]), []).append(p["clusters"])
    real = "real kube-apiserver + kwok, c=1"
    assert sizes[("rayop", real)] == sizes[("KubeRay v1.7.0", real)] == [20, 100, 300, 1000]
    assert sizes[("rayop", "embedded plane, rayop alone, c=8")] == [100, 1000, 10000]


def test_a_changed_cell_is_caught() -> None:
    p = next(p for p in _points() if p["clusters"] == 1000 and p["operator"] == "rayop")
    figure = dict(p["time_to_ready_s"], value=p["time_to_ready_s"]["value"] + 0.1)
    assert _cited(p["section"], p["table"], figure) != figure["value"]


def test_the_script_writes_the_three_pngs(plot: ModuleType, tmp_path: Path) -> None:
    written = plot.draw(plot.load_points(DATA), tmp_path)
    assert [p.name for p in written] == ["perf-time.png", "perf-cpu.png", "perf-rss.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000


def test_a_point_without_a_figure_is_left_out_of_that_plot_only(plot: ModuleType) -> None:
    points = _points()
    real = ("KubeRay v1.7.0", "real kube-apiserver + kwok, c=1")
    assert [c for c, _, _ in plot.series(points, "time_to_ready_s")[real]] == [100, 300, 1000]
    assert [c for c, _, _ in plot.series(points, "peak_rss_mb")[real]] == [20, 100, 300, 1000]


def test_the_report_embeds_every_png_and_they_are_checked_in(plot: ModuleType) -> None:
    text = DOC.read_text()
    for *_, name, _ in plot.FIGURES:
        assert f"](img/{name})" in text, name
        assert (ROOT / "docs" / "img" / name).is_file(), name


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_link_to_a_section_of_the_page_names_a_heading_of_it() -> None:
    text = DOC.read_text()
    anchors = {_slug(m[2]) for line in text.splitlines() if (m := HEADING.match(line))}
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links
    assert sorted(set(links) - anchors) == []


def _report() -> tuple[list[str], str]:
    """Returns the report's lines (its ``##`` section, subsections included) and the text of
    the rest of the page."""
    lines = DOC.read_text().splitlines()
    start = lines.index("## The report")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    return lines[start:end], "\n".join(lines[:start] + lines[end:])


def _scenario_rows() -> list[list[str]]:
    lines, _ = _report()
    tables = [t for t in _tables(lines) if t[0][0].startswith("figure")]
    assert len(tables) >= 10
    for t in tables:
        assert t[0][1:4] == ["rayop", "KubeRay v1.7.0", "ratio"] or t[0][3] == "ratio", t[0]
    return [row for t in tables for row in t[1:]]


def test_every_figure_of_the_reports_tables_is_one_of_the_detail_below_it() -> None:
    _, rest = _report()
    detail = set(_numbers(rest))
    missing = [
        (row[0], n)
        for row in _scenario_rows()
        for cell in row[1:4]
        if "\N{DAGGER}" not in cell
        for n in _numbers(cell)
        if n not in detail
    ]
    assert missing == []


def test_a_ratio_marked_computed_is_the_two_figures_beside_it_divided() -> None:
    computed = [row for row in _scenario_rows() if "\N{DAGGER}" in row[3]]
    assert len(computed) >= 5
    for row in computed:
        assert _numbers(row[3]) == [round(_numbers(row[1])[0] / _numbers(row[2])[0], 2)], row
