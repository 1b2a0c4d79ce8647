"""Shows and saves bench results: live progress, the end table, JSON and an HTML page.

The HTML page is self-contained: its charts (ready latency and queue wait against concurrency,
the median of each value's runs when ``--repeat`` ran it more than once) are matplotlib PNGs
embedded as base64.
"""

from __future__ import annotations

import base64
import html
import io
import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rayop.bench.recommend import Recommendation
from rayop.bench.report_workers import workers_chart
from rayop.bench.results import ConcurrencyResult


class LiveProgress:
    """A rich progress display with one bar per concurrency value (context manager)."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("[bold]concurrency {task.fields[concurrency]:>3}"),
            TextColumn("{task.fields[phase]:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("clusters ready"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[int | str, Any] = {}

    def __enter__(self) -> LiveProgress:
        self._progress.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.__exit__(exc_type, exc, tb)

    def update(self, concurrency: int | str, phase: str, ready: int, total: int) -> None:
        """Shows how far the run at ``concurrency`` is (the runner's progress callback)."""
        task = self._tasks.get(concurrency)
        if task is None:
            task = self._progress.add_task("", total=None, concurrency=concurrency, phase=phase)
            self._tasks[concurrency] = task
        self._progress.update(task, completed=ready, total=total or None, phase=phase)


def _n(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


ROWS: list[tuple[str, Callable[[ConcurrencyResult], str]]] = [
    ("time until all ready (s)", lambda r: _n(r.seconds_until_all_ready, 1) + (" TIMEOUT" if r.timed_out else "")),
    ("ready latency p50 / p95 / max (s)", lambda r: " / ".join(_n(v, 1) for v in (r.ready_latency.p50, r.ready_latency.p95, r.ready_latency.max))),
    ("queue wait p50 / p99 (s)", lambda r: f"{_n(r.queue_wait_p50, 3)} / {_n(r.queue_wait_p99, 2)}"),
    ("queue wait mean (s)", lambda r: _n(r.queue_wait_mean, 3)),
    ("queue depth mean / max", lambda r: f"{r.queue_depth_mean:.1f} / {r.queue_depth_max:.0f}"),
    ("reconcile time p50 / p99 (s)", lambda r: f"{_n(r.reconcile_time_p50, 3)} / {_n(r.reconcile_time_p99, 2)}"),
    ("longest single reconcile (s)", lambda r: _n(r.longest_reconcile_seconds, 1)),
    ("workers all busy (% of time)", lambda r: f"{r.busy_fraction:.0%}"),
    ("mean busy workers", lambda r: f"{r.mean_active_workers:.2f}"),
    ("reconciles", lambda r: str(r.reconciles)),
    ("reconcile errors (/min)", lambda r: f"{r.reconcile_errors} ({r.reconcile_errors_per_minute:.1f})"),
    ("409 conflicts (/min)", lambda r: f"{r.conflicts} ({r.conflicts_per_minute:.1f})"),
    ("user edits answered 409", lambda r: str(r.user_conflicts)),
    ("API latency mean / p99 (s)", lambda r: f"{_n(r.api_latency_mean, 3)} / {_n(r.api_latency_p99, 2)}"),
    ("API latency excl. throttling, mean (s)", lambda r: _n(r.api_server_latency_mean, 3)),
    ("throttling wait total / mean (s)", lambda r: f"{r.throttle_wait_seconds:.1f} / {_n(r.throttle_wait_mean, 3)}"),
    ("operator requests", lambda r: str(r.operator_requests)),
    ("API slowed at (s): workers then, fewer after (s)", lambda r: _slowdown(r)),
    ("pod creates (expected)", lambda r: f"{r.pod_creates} ({r.expected_pod_creates})"),
    ("duplicate pod creates", lambda r: str(r.duplicate_pod_creates)),
    ("event writes (API server, by verb)", lambda r: _counts(r.event_writes_by_verb)),
    ("events recorded", lambda r: "-" if r.events_recorded is None else str(r.events_recorded)),
    ("events not written alone, by reason", lambda r: _counts(r.events_unsent_by_reason)),
    ("operator CPU (s)", lambda r: _n(r.operator_cpu_seconds, 1)),
    ("operator peak RSS (MiB)", lambda r: _n(r.operator_peak_rss_mb, 0)),
]  # fmt: skip


def _slowdown(r: ConcurrencyResult) -> str:
    if r.api_slowdown_at is None:
        return "-"
    after = "never" if r.workers_reduced_after is None else _n(r.workers_reduced_after, 1)
    return f"{r.api_slowdown_at:.1f}: {_n(r.workers_at_slowdown, 0)}, {after}"


def _counts(counts: dict[str, int] | None) -> str:
    """Formats non-zero counts as ``a 3, b 1``; ``-`` when unknown, ``0`` when all are zero."""
    if counts is None:
        return "-"
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "0"


def table_rows(results: Sequence[ConcurrencyResult]) -> list[tuple[str, list[str]]]:
    """Returns the end table as (label, one cell per concurrency value) rows."""
    slowed = any(r.api_slowdown_at is not None for r in results)
    rows = [
        (label, [cell(r) for r in results])
        for label, cell in ROWS
        if slowed or not label.startswith("API slowed")
    ]
    groups = sorted({g for r in results for g in r.ready_latency_by_group})
    for g in groups:
        cells = []
        for r in results:
            s = r.ready_latency_by_group.get(g)
            cells.append(
                "n/a" if s is None else f"{_n(s.p50, 1)} / {_n(s.p95, 1)} / {_n(s.max, 1)}"
            )
        rows.insert(2, (f"  {g}: p50 / p95 / max (s)", cells))
    verbs = sorted({v for r in results for v in r.api_requests_by_verb})
    for v in verbs:
        rows.append(
            (f"API requests: {v}", [str(r.api_requests_by_verb.get(v, 0)) for r in results])
        )
    return rows


def render_table(results: Sequence[ConcurrencyResult], *, title: str = "") -> Table:
    """Returns the end table (one column per concurrency value)."""
    table = Table(title=title or None)
    table.add_column("")
    for r in results:
        table.add_column(f"concurrency {r.label}", justify="right")
    for label, cells in table_rows(results):
        table.add_row(label, *cells)
    return table


def plain_table(results: Sequence[ConcurrencyResult]) -> str:
    """Returns the end table as fixed-width text."""
    rows = table_rows(results)
    width = max(len(label) for label, _ in rows) + 2
    header = "".join(f"{'c=' + r.label:>20}" for r in results)
    lines = [f"{'':{width}}{header}"]
    lines += [f"{label:{width}}" + "".join(f"{c:>20}" for c in cells) for label, cells in rows]
    return "\n".join(lines)


def write_json(
    path: Path, results: Sequence[ConcurrencyResult], advice: Recommendation, meta: dict[str, Any]
) -> None:
    """Writes the results, the advice and the run settings as JSON."""
    doc = {
        "settings": meta,
        "results": [r.to_json() for r in results],
        "recommendation": {
            "concurrency": advice.concurrency,
            "action": advice.action,
            "reasons": list(advice.reasons),
            "next_limit": advice.next_limit,
            "margin": advice.margin,
            "adaptive": [a.to_json() for a in advice.adaptive],
            "advise_checks": [c.to_json() for c in advice.advise_checks],
            "text": advice.text,
        },
    }
    path.write_text(json.dumps(doc, indent=2, default=str))


def by_concurrency(
    results: Sequence[ConcurrencyResult], value: Callable[[ConcurrencyResult], float | None]
) -> tuple[list[int], list[float]]:
    """Returns the fixed concurrency values in order and, for each, the median of ``value``
    over its runs (a missing figure counts as 0); the adaptive runs are left out unless there
    is no fixed one."""
    fixed = [r for r in results if not r.adaptive] or list(results)
    runs: dict[int, list[float]] = {}
    for r in fixed:
        runs.setdefault(r.concurrency, []).append(value(r) or 0.0)
    xs = sorted(runs)
    return xs, [statistics.median(runs[x]) for x in xs]


def _chart(results: Sequence[ConcurrencyResult], *, kind: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    series: list[tuple[str, str, str, Callable[[ConcurrencyResult], float | None]]]
    if kind == "ready":
        series = [
            ("ready latency p50", "o", "-", lambda r: r.ready_latency.p50),
            ("ready latency p95", "o", "-", lambda r: r.ready_latency.p95),
            ("ready latency max", "o", "-", lambda r: r.ready_latency.max),
        ]
        series.append(("all ready", "s", "--", lambda r: r.seconds_until_all_ready))
        ax.set_title("Time to ready vs concurrency")
    else:
        series = [
            ("queue wait p50", "o", "-", lambda r: r.queue_wait_p50),
            ("queue wait p99", "o", "-", lambda r: r.queue_wait_p99),
            ("queue wait mean", "^", "-", lambda r: r.queue_wait_mean),
        ]
        ax.set_title("Workqueue wait vs concurrency")
    xs: list[int] = []
    for label, marker, ls, value in series:
        xs, ys = by_concurrency(results, value)
        ax.plot(xs, ys, marker=marker, ls=ls, label=label)
    ax.set_ylabel("seconds")
    if any(r.repeat for r in results):
        ax.set_title(ax.get_title() + " (medians of the runs)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("--reconcile-concurrency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def write_html(
    path: Path, results: Sequence[ConcurrencyResult], advice: Recommendation, meta: dict[str, Any]
) -> None:
    """Writes a self-contained HTML page: settings, advice, table and two charts."""
    rows = table_rows(results)
    head = "".join(f"<th>concurrency {html.escape(r.label)}</th>" for r in results)
    body = "".join(
        f"<tr><th>{html.escape(label)}</th>"
        + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        + "</tr>"
        for label, cells in rows
    )
    settings = "".join(
        f"<li>{html.escape(str(k))}: {html.escape(str(v))}</li>" for k, v in meta.items()
    )
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in advice.reasons)
    charts = "".join(
        f'<img alt="{kind}" src="data:image/png;base64,{_chart(results, kind=kind)}">'
        for kind in ("ready", "queue")
    )
    if any(r.adaptive for r in results):
        charts += f'<img alt="workers" src="data:image/png;base64,{workers_chart(results)}">'
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>rayop bench</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}th:first-child{{text-align:left}}</style>
</head><body>
<h1>rayop bench: {html.escape(str(meta.get("scenario", "")))}</h1>
<h2>Recommendation</h2><p><b>{html.escape(advice.headline)}</b></p><ul>{reasons}</ul>
<h2>Results</h2><table><tr><th></th>{head}</tr>{body}</table>
<h2>Charts</h2>{charts}
<h2>Settings</h2><ul>{settings}</ul>
</body></html>
"""
    path.write_text(page)


def print_summary(
    console: Console, results: Sequence[ConcurrencyResult], advice: Recommendation, title: str
) -> None:
    """Prints the table and the advice with its reasons."""
    console.print(render_table(results, title=title))
    console.print(f"[bold]{advice.headline}[/bold]")
    for reason in advice.reasons:
        console.print(f"  - {reason}")
    for check in advice.advise_checks:
        console.print(f"  - {check.sentence}")
