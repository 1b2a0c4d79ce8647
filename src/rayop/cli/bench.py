"""``rayop bench``: should --reconcile-concurrency be raised? Measure it.

Runs a seeded scenario once per ``--concurrency`` value on a fresh embedded control plane (or
an existing cluster), reads the operator's Prometheus metrics and the API server's request
counts, prints a table and a recommendation with its reasons.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Annotated

import typer

from rayop.cli.app import app
from rayop.cli.extras import require_extras
from rayop.cli.operator_flags import BurstOpt, MaxConcurrencyOpt, QpsOpt


def parse_concurrency(value: str) -> tuple[tuple[int, ...], bool]:
    """Parses ``1,2,4,8,auto`` into sorted distinct positive integers and whether auto is asked.

    Raises:
        typer.BadParameter: an entry is neither a positive integer nor ``auto``, or no fixed
            value is given (auto is compared with fixed values).
    """
    entries = [v.strip().lower() for v in value.split(",") if v.strip()]
    auto = "auto" in entries
    try:
        values = sorted({int(v) for v in entries if v != "auto"})
    except ValueError as exc:
        raise typer.BadParameter(
            f"--concurrency expects integers like 1,2,4,8 (and auto): {value!r}"
        ) from exc
    if not values or values[0] < 1:
        raise typer.BadParameter("--concurrency needs fixed values >= 1 (auto is compared to them)")
    return tuple(values), auto


@app.command("bench")
def bench(
    scenario: Annotated[
        str,
        typer.Option(
            help="create, scale-storm, churn, head-of-line, conflict-storm, rayjob-mix or "
            "api-slowdown (needs --in-process)."
        ),
    ] = "create",
    clusters: Annotated[int, typer.Option(min=1, help="RayClusters in the scenario.")] = 100,
    workers: Annotated[int, typer.Option(min=0, help="Workers per RayCluster.")] = 10,
    concurrency: Annotated[
        str,
        typer.Option(
            help="Comma-separated --reconcile-concurrency values to compare; auto runs "
            "--reconcile-concurrency=auto beside them."
        ),
    ] = "1,2,4,8",
    max_reconcile_concurrency: MaxConcurrencyOpt = 16,
    repeat: Annotated[
        int, typer.Option(min=1, help="Runs of every value (2 or more measure the noise).")
    ] = 1,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    big_workers: Annotated[
        int, typer.Option(help="head-of-line: workers of the big cluster.")
    ] = 500,
    churn_rate: Annotated[
        float, typer.Option(min=0.1, help="churn, api-slowdown: clusters created per second.")
    ] = 5.0,
    pod_start_delay: Annotated[
        float, typer.Option(help="Seconds from pod creation to Running and Ready.")
    ] = 1.0,
    api_latency: Annotated[
        float, typer.Option(help="Seconds added to every non-watch API request.")
    ] = 0.0,
    watch_lag: Annotated[float, typer.Option(help="Seconds each watch event is held.")] = 0.0,
    api_service_slots: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Serve --api-latency to this many requests at once; the rest queue (an API "
            "server at its capacity).",
        ),
    ] = None,
    api_latency_step: Annotated[
        str | None,
        typer.Option(
            metavar="AFTER=SECONDS",
            help="Raise --api-latency to SECONDS, AFTER seconds into the measured phase "
            "(needs --in-process).",
        ),
    ] = None,
    qps: QpsOpt = 100.0,
    burst: BurstOpt = 200,
    pod_create_concurrency: Annotated[
        int,
        typer.Option(min=1, help="Pod creates of one group in flight at once (1: like KubeRay)."),
    ] = 16,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the results as JSON here.")
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Write an HTML report with charts here.")
    ] = None,
    kubeconfig: Annotated[
        str | None, typer.Option(help="Use this cluster instead of an embedded control plane.")
    ] = None,
    in_process: Annotated[
        bool, typer.Option(help="Run the embedded control plane in this process.")
    ] = False,
    external_operator: Annotated[
        bool, typer.Option(help="Do not run rayop; observe an operator already running.")
    ] = False,
    external_metrics_url: Annotated[
        str | None, typer.Option(help="The external operator's /metrics URL.")
    ] = None,
    external_operator_pid: Annotated[
        int | None,
        typer.Option(help="The external operator's process id (for its CPU seconds and RSS)."),
    ] = None,
    operator_command: Annotated[
        str | None,
        typer.Option(
            help="Start this operator (KubeRay, say) for every run instead of rayop: a command "
            "line with {kubeconfig}, {concurrency}, {metrics_port}, {qps} and {burst} filled "
            "in per run.",
        ),
    ] = None,
    advise_windows: Annotated[
        Path | None,
        typer.Option(
            help="Save each run's measured phase into this folder as a `rayop advise --save` "
            "window (c<N>.json), to compare two runs with `rayop advise --before A --after B`.",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds allowed per concurrency value.")] = 600.0,
    keep_objects: Annotated[
        bool,
        typer.Option(help="With --kubeconfig: leave the namespace and its RayClusters in place."),
    ] = False,
) -> None:
    """Compare --reconcile-concurrency values on a seeded scenario and recommend one."""
    # Without --kubeconfig the benchmark runs its own embedded control plane.
    require_extras("rayop bench", "bench", *(() if kubeconfig else ("sim",)))
    from rich.console import Console

    from rayop.bench.environment import ServerSettings
    from rayop.bench.recommend import recommend
    from rayop.bench.report import LiveProgress, print_summary, write_html, write_json
    from rayop.bench.runner import BenchConfig, run_bench
    from rayop.bench.scenarios import SCENARIOS, ScenarioSpec

    if scenario not in SCENARIOS:
        raise typer.BadParameter(f"--scenario must be one of {', '.join(SCENARIOS)}")
    if external_operator and not external_metrics_url:
        raise typer.BadParameter("--external-operator needs --external-metrics-url")
    if external_operator and not kubeconfig:
        raise typer.BadParameter("--external-operator needs --kubeconfig (the operator's cluster)")
    from rayop.bench.latency_step import LatencyStep
    from rayop.bench.launched_operator import OperatorCommand

    launched = None
    if operator_command is not None:
        if external_operator:
            raise typer.BadParameter(
                "--operator-command and --external-operator exclude each other"
            )
        try:
            launched = OperatorCommand.parse(operator_command)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc

    try:
        step = LatencyStep.parse(api_latency_step) if api_latency_step is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if step is not None and (kubeconfig or not in_process):
        raise typer.BadParameter(
            "--api-latency-step needs --in-process: only the in-process plane changes its "
            "latency while it runs"
        )
    if scenario == "api-slowdown" and (kubeconfig or not in_process):
        raise typer.BadParameter(
            "--scenario api-slowdown needs --in-process: only the in-process plane changes its "
            "latency while it runs"
        )
    values, auto = parse_concurrency(concurrency)
    if external_operator:
        values, auto = values[:1], False
    if launched is not None and auto:
        raise typer.BadParameter("--operator-command runs fixed --concurrency values, not auto")
    config = BenchConfig(
        scenario=ScenarioSpec(
            kind=scenario,
            clusters=clusters,
            workers=workers,
            seed=seed,
            big_workers=big_workers,
            churn_rate=churn_rate,
        ),
        concurrency=values,
        adaptive=auto,
        max_concurrency=max_reconcile_concurrency,
        repeat=repeat,
        latency_step=step,
        server=ServerSettings(
            pod_start_delay=pod_start_delay,
            api_latency=api_latency,
            watch_lag=watch_lag,
            api_service_slots=api_service_slots,
            seed=seed,
            tls=launched is not None,
        ),
        qps=qps,
        burst=burst,
        pod_create_concurrency=pod_create_concurrency,
        kubeconfig=kubeconfig,
        in_process=in_process,
        external_metrics_url=external_metrics_url if external_operator else None,
        external_operator_pid=external_operator_pid if external_operator else None,
        operator_command=launched,
        advise_windows=advise_windows,
        timeout=timeout,
        keep_objects=keep_objects,
    )
    logging.basicConfig(level=logging.CRITICAL)  # expected 409s are logged as reconcile errors
    console = Console(stderr=True)
    started = time.monotonic()
    with LiveProgress(console) as live:
        results = asyncio.run(run_bench(config, progress=live.update))
    wall = time.monotonic() - started
    advice = recommend(results, qps=qps, burst=burst)
    meta = {
        "scenario": scenario,
        "clusters": clusters,
        "workers": workers,
        "big_workers": big_workers if scenario == "head-of-line" else None,
        "churn_rate": churn_rate if scenario in ("churn", "api-slowdown") else None,
        "concurrency": [*values, *(["auto"] if auto else [])],
        "max_reconcile_concurrency": max_reconcile_concurrency if auto else None,
        "repeat": repeat,
        "seed": seed,
        "pod_start_delay": pod_start_delay,
        "api_latency": api_latency,
        "watch_lag": watch_lag,
        "api_service_slots": api_service_slots,
        "api_latency_step": api_latency_step,
        "qps": qps,
        "burst": burst,
        "pod_create_concurrency": pod_create_concurrency,
        "control_plane": kubeconfig or ("in-process" if in_process else "subprocess"),
        "operator": (
            external_metrics_url
            if external_operator
            else operator_command
            if operator_command is not None
            else "rayop (in-process)"
        ),
        "wall_seconds": round(wall, 1),
    }
    title = f"rayop bench {scenario}: {clusters} clusters x {workers} workers ({wall:.0f} s)"
    print_summary(Console(), results, advice, title)
    if json_path is not None:
        write_json(json_path, results, advice, meta)
    if report is not None:
        write_html(report, results, advice, meta)
    if any(r.duplicate_pod_creates for r in results):
        raise typer.Exit(1)
