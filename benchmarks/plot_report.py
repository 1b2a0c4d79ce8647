"""Draws the report's plots from its checked-in data (not a benchmark: it runs nothing).

Reads ``docs/performance-data.json`` (the measured points docs/performance.md's report cites,
each figure with the table it comes from) and writes three PNGs into ``docs/img/``: time until
all ready, operator CPU while creating, and operator peak RSS, each against the number of
RayClusters (log x axis; log y for time and CPU, which span 1.5-105 s), one line per operator
and plane, each point labelled clusters x workers. The style is that of ``rayop bench``'s charts
(``rayop.bench.report``: 6 inches wide at 100 dpi, light grid, small legend). Run::

    .venv/bin/python benchmarks/plot_report.py [--data docs/performance-data.json] [--out docs/img]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "performance-data.json"
OUT = ROOT / "docs" / "img"

FIGURES: list[tuple[str, str, str, str, bool]] = [
    ("time_to_ready_s", "Time until all RayClusters are ready", "seconds", "perf-time.png", True),
    ("operator_cpu_s", "Operator CPU while creating", "CPU seconds", "perf-cpu.png", True),
    ("peak_rss_mb", "Operator peak RSS", "MB", "perf-rss.png", False),
]
"""(data key, title, y label, file name, log y axis) of each plot."""

COLORS = {"rayop": "tab:blue", "KubeRay v1.7.0": "tab:orange"}


def load_points(path: Path = DATA) -> list[dict[str, Any]]:
    """Returns the data file's points."""
    points: list[dict[str, Any]] = json.loads(path.read_text())["points"]
    return points


def series(
    points: list[dict[str, Any]], key: str
) -> dict[tuple[str, str], list[tuple[int, int, float]]]:
    """Returns, per (operator, plane), its (clusters, workers, value) points of ``key`` in
    cluster order; a point whose section records no such figure is left out."""
    lines: dict[tuple[str, str], list[tuple[int, int, float]]] = {}
    for p in points:
        if p[key] is not None:
            lines.setdefault((p["operator"], p["plane"]), []).append(
                (p["clusters"], p["workers"], float(p[key]["value"]))
            )
    return {k: sorted(v) for k, v in lines.items()}


def draw(points: list[dict[str, Any]], out: Path = OUT) -> list[Path]:
    """Writes one PNG per figure into ``out`` and returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for key, title, ylabel, name, log_y in FIGURES:
        fig, ax = plt.subplots(figsize=(6, 4.5), dpi=100)
        for (operator, plane), pts in series(points, key).items():
            embedded = plane.startswith("embedded")
            xs = [c for c, _, _ in pts]
            ys = [v for _, _, v in pts]
            ax.plot(xs, ys, marker="s" if embedded else "o", ls="--" if embedded else "-",
                    color=COLORS.get(operator), label=f"{operator} ({plane})")  # fmt: skip
            below = operator == "rayop" and not embedded
            for c, w, v in pts:
                ax.annotate(f"{c:,}x{w}", (c, v), textcoords="offset points",
                            xytext=(5, -10 if below else 4), fontsize=7)  # fmt: skip
        ax.set_xscale("log")
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel("RayClusters")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16))
        fig.tight_layout()
        path = out / name
        fig.savefig(path, format="png")
        plt.close(fig)
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for path in draw(load_points(args.data), args.out):
        print(path)


if __name__ == "__main__":
    main()
