"""Sums the stacks ``benchmarks/cpu_sampler`` wrote by function (not a test).

Prints each function's share of the samples taken inside the event loop, inclusive (the
function or anything it called) and self, most first::

    .venv/bin/python benchmarks/cpu_samples_report.py FILE [--top 40]

Given several files and ``--per N,N,...`` (each file's RayClusters), it sets them side by side
as CPU ms per cluster (a sample is worth the phase's CPU seconds over its samples, both in the
file's header), with the last file's figure over the first's, largest growth in ms first::

    .venv/bin/python benchmarks/cpu_samples_report.py A.1000-operator.create \\
        A.10000-operator.create --per 1000,10000
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

LOOP = "base_events.py:run_forever"


def read(path: Path) -> list[tuple[int, list[str]]]:
    """Returns the (count, frames) lines of a samples file, its ``#`` header skipped."""
    out: list[tuple[int, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        count, stack = line.split(" ", 1)
        out.append((int(count), stack.split(";")))
    return out


def header(path: Path) -> dict[str, float]:
    """Returns a samples file's header as name -> number (``samples``, ``cpu``; ``gen<g>`` the
    collections and ``gen<g>_cpu`` their seconds; ``tracked``), what the file holds of it."""
    words = path.read_text(encoding="utf-8").split("\n", 1)[0].lstrip("# ").split()
    out: dict[str, float] = {}
    i = 0
    while i + 1 < len(words):
        name = words[i]
        out[name] = float(words[i + 1])
        if name.startswith("gen") and i + 2 < len(words):
            out[f"{name}_cpu"] = float(words[i + 2])
            i += 1
        i += 2
    return out


def shares(rows: list[tuple[int, list[str]]]) -> tuple[int, Counter[str], Counter[str]]:
    """Returns the samples inside the event loop, and inclusive and self counts by function."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for count, frames in rows:
        if not any(f.endswith(LOOP) for f in frames):
            continue  # start-up, before the event loop ran
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        own[frames[-1]] += count
    return total, inclusive, own


def compare(files: list[Path], per: list[int], top: int) -> None:
    """Prints the files' inclusive and self CPU ms per cluster side by side."""
    ms_per_sample = []
    tables = []
    for path, clusters in zip(files, per, strict=True):
        head = header(path)
        ms_per_sample.append(1000 * head["cpu"] / max(1.0, head["samples"]) / clusters)
        tables.append(shares(read(path)))
        gc_text = ", ".join(
            f"gen{g} {head.get(f'gen{g}', 0):.0f} in {1000 * head.get(f'gen{g}_cpu', 0) / clusters:.3f}"
            for g in range(3)
        )
        print(
            f"{path.name}: {head['cpu']:.1f} s CPU = {1000 * head['cpu'] / clusters:.2f} ms per "
            f"cluster; GC collections in ms per cluster: {gc_text}; tracked {head.get('tracked', 0):.0f}"
        )
    names = " | ".join(f"{n:,}" for n in per)
    for title, pick in (("inclusive", 1), ("self", 2)):
        rows: dict[str, list[float]] = {}
        for i, table in enumerate(tables):
            counts = table[1] if pick == 1 else table[2]
            for frame, count in counts.items():
                rows.setdefault(frame, [0.0] * len(tables))[i] = count * ms_per_sample[i]
        ranked = sorted(rows.items(), key=lambda kv: abs(kv[1][-1] - kv[1][0]), reverse=True)
        print(f"\n{title}, ms per cluster ({names}), last / first, by growth")
        for frame, values in ranked[:top]:
            ratio = values[-1] / values[0] if values[0] else float("inf")
            cells = " ".join(f"{v:7.3f}" for v in values)
            print(f"{cells}  {ratio:5.2f}x  {frame}")


def main() -> None:
    """Prints the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path, nargs="+")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--per", default=None, help="each file's RayClusters, comma-separated")
    args = parser.parse_args()
    if args.per is not None:
        compare(args.file, [int(v) for v in args.per.split(",")], args.top)
        return
    total, inclusive, own = shares(read(args.file[0]))
    print(f"{total} samples in the event loop")
    for title, counts in (("inclusive", inclusive), ("self", own)):
        print(f"\n{title}")
        for frame, count in counts.most_common(args.top):
            print(f"{100 * count / max(1, total):5.1f} %  {frame}")


if __name__ == "__main__":
    main()
