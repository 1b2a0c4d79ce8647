"""Sums the stacks ``benchmarks/cpu_sampler`` wrote by function (not a test).

Prints each function's share of the samples taken inside the event loop, inclusive (the
function or anything it called) and self, most first::

    .venv/bin/python benchmarks/cpu_samples_report.py FILE [--top 40]
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


def main() -> None:
    """Prints the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    total, inclusive, own = shares(read(args.file))
    print(f"{total} samples in the event loop")
    for title, counts in (("inclusive", inclusive), ("self", own)):
        print(f"\n{title}")
        for frame, count in counts.most_common(args.top):
            print(f"{100 * count / max(1, total):5.1f} %  {frame}")


if __name__ == "__main__":
    main()
