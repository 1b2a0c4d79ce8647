"""``rayop preview``: what this rayop would do on its first pass over each live ray.io object,
writing nothing.

It takes the operator flags of ``rayop run`` (so a preview answers for the flags, feature gates
and Configuration file the operator will run with) and a kubeconfig with read access. For every
RayCluster, RayJob and RayService (or those of ``-n NAMESPACE``, or those named ``KIND/NAME``)
it runs the controllers' first pass with every write withheld
(:func:`rayop.preview.first_pass.first_passes`) and prints a verdict per object
(:mod:`rayop.preview.verdicts`): nothing, status only, update in place, create or recreate pods,
a new RayCluster (its pods and resources), a job submitted or deleted, refused.

With the RayCronJob gate on (``--feature-gates RayCronJob=true``, as the operator would run)
RayCronJobs are previewed too: their pass, and what their next tick creates
(:mod:`rayop.preview.cron`).

``-f FILE`` previews a change not yet applied: each ray.io object of the file is applied to its
live object in a server-side dry run (:mod:`rayop.preview.edits`) and the first pass runs over
that (nothing is written; the dry run persists nothing). For each object whose pass would create
pods (a new RayCluster, new or recreated pods) it also says whether the nodes' free allocatable
capacity holds them, as kube-scheduler counts it, and which resource runs short
(:mod:`rayop.preview.capacity`; it needs to list nodes and pods).

Exit status, so that a pipeline can gate on it:

- 0: nothing disruptive would happen;
- 1: something disruptive would happen (pods created or deleted, a new RayCluster, a job
  submitted, stopped or deleted, a RayCluster deleted), or a pass could not be told;
- 2: something could not be previewed (a kind not served, a namespace not readable, a named
  object missing, an object the operator refuses, bad flags); the rest of the report is still
  printed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.app import app
from rayop.cli.kuberay_flags import (
    KUBERAY_FEATURE_DEFAULTS,
    KUBERAY_LOG_DEFAULTS,
    KubeRayFeatureFlags,
)
from rayop.cli.operator_flags import KUBERAY_DEFAULTS, LogFlags, OperatorFlags
from rayop.cli.operator_setup import operator_settings
from rayop.cli.option_groups import expand_option_groups
from rayop.cli.render import QUIET_LOGS, read_input
from rayop.cli.replica_flags import KUBERAY_REPLICA

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rayop.controllers.assembly.operator_settings import OperatorSettings
    from rayop.kube.resource import Resource
    from rayop.preview.manifests import Manifests
    from rayop.preview.verdicts import Verdict

EXIT_NOTHING_DISRUPTIVE = 0
EXIT_DISRUPTIVE = 1
EXIT_INCOMPLETE = 2


async def _preview(
    kubeconfig: str | None,
    settings: OperatorSettings,
    namespaces: list[str],
    names: list[tuple[str, str]],
    timeout: float,
) -> tuple[list[Verdict], list[str]]:
    from rayop.kube.client import KubeClient
    from rayop.kube.config import load_config
    from rayop.preview.first_pass import first_passes
    from rayop.preview.live_objects import list_live_objects
    from rayop.preview.verdicts import verdicts

    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config) as client:
        live = await list_live_objects(client, namespaces, names, _kinds(settings))
    if not live.objects:
        return [], live.problems
    passes = await first_passes(config, settings, live.objects, timeout=timeout)
    gates = settings.options.feature_gates
    return verdicts(live.objects, passes, gates, timeout=timeout), live.problems


async def _preview_file(
    kubeconfig: str | None, settings: OperatorSettings, manifests: Manifests, timeout: float
) -> tuple[list[Verdict], list[str]]:
    from rayop.kube.client import KubeClient
    from rayop.kube.config import load_config
    from rayop.preview.capacity import with_room
    from rayop.preview.edits import edited_objects
    from rayop.preview.first_pass import first_passes
    from rayop.preview.verdicts import verdicts

    config = await load_config(kubeconfig=kubeconfig)
    async with KubeClient(config) as client:
        edits = await edited_objects(client, manifests)
    if not edits.objects:
        return [], edits.problems
    passes = await first_passes(
        config, settings, edits.objects, timeout=timeout, overlay=edits.overlay
    )
    gates = settings.options.feature_gates
    results = verdicts(edits.objects, passes, gates, timeout=timeout, new=edits.new)
    for verdict in results:
        if (verdict.kind, verdict.namespace, verdict.name) in edits.new:
            verdict.effects.insert(0, "not live: the file creates it")
    results, unchecked = await with_room(config, results, passes, settings.options)
    return results, [*edits.problems, *unchecked]


def _kinds(settings: OperatorSettings) -> Mapping[str, Resource]:
    """The kinds the operator reconciles with these settings (RayCronJob behind its gate)."""
    from rayop.preview.manifests import PREVIEW_KINDS, RAY_KINDS

    return PREVIEW_KINDS if settings.options.feature_gates.ray_cron_job else RAY_KINDS


def _text(verdict: Verdict) -> str:
    flag = " (disruptive)" if verdict.disruptive else ""
    lines = [f"{verdict.kind} {verdict.namespace}/{verdict.name}: {verdict.verdict}{flag}"]
    lines += [f"  - {effect}" for effect in verdict.effects]
    lines += [f"  why: {reason}" for reason in verdict.reasons]
    return "\n".join(lines)


def _manifests(
    text: str, source: str, kinds: Mapping[str, Resource]
) -> tuple[Manifests, list[str]]:
    """The file's good objects and a line per bad document; exits 2 with a line per problem
    when none is good."""
    from rayop.preview.manifests import BadInput, read_good_manifests

    try:
        return read_good_manifests(text, source, kinds)
    except BadInput as exc:
        for problem in exc.problems:
            typer.echo(f"rayop: {problem}", err=True)
        raise typer.Exit(EXIT_INCOMPLETE) from exc


@app.command("preview")
@expand_option_groups
def preview(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Objects to preview, KIND/NAME (e.g. rayservice/my-app); default all."),
    ] = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option("-n", "--namespace", help="Only this namespace (repeatable)."),
    ] = None,
    kubeconfig: Annotated[
        str | None,
        typer.Option(
            "--kubeconfig", help="Path to a kubeconfig; default: KUBECONFIG, ~/.kube/config."
        ),
    ] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="text or json.")] = "text",
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for the first passes.")
    ] = 60.0,
    filename: Annotated[
        Path | None,
        typer.Option(
            "-f", "--filename", help="Preview applying this file's ray.io objects ('-': stdin)."
        ),
    ] = None,
    operator: OperatorFlags = KUBERAY_DEFAULTS,
    logs: LogFlags = QUIET_LOGS,
    kuberay: KubeRayFeatureFlags = KUBERAY_FEATURE_DEFAULTS,
) -> None:
    """Show what this rayop would do on its first pass over each live RayCluster, RayJob and
    RayService, writing nothing (read access suffices).

    Exit 0: nothing disruptive; 1: something disruptive (pods created or deleted, a new
    RayCluster, a job submitted or deleted, a pass that failed); 2: something could not be
    previewed (the rest is still reported). -f FILE previews applying a file's objects.
    """
    from rayop.kube.config import ConfigError
    from rayop.preview.live_objects import parse_names

    if output not in ("text", "json"):
        raise typer.BadParameter("text or json", param_hint="--output")
    pairs, bad = parse_names(names or [])
    namespaces = list(namespace or [])
    if pairs and len(namespaces) > 1:
        bad.append("KIND/NAME takes at most one --namespace")
    if filename is not None and (pairs or namespaces):
        bad.append("-f takes the objects from the file: no KIND/NAME or --namespace with it")
    settings = operator_settings(operator, KUBERAY_REPLICA, logs, KUBERAY_LOG_DEFAULTS, kuberay)
    problems = list(bad)
    results: list[Verdict] = []
    if not bad:
        try:
            if filename is not None:
                manifests, bad_documents = _manifests(
                    read_input(filename), str(filename), _kinds(settings)
                )
                problems += bad_documents
                results, unread = asyncio.run(
                    _preview_file(kubeconfig, settings, manifests, timeout)
                )
            else:
                results, unread = asyncio.run(
                    _preview(kubeconfig, settings, namespaces, pairs, timeout)
                )
        except ConfigError as exc:
            unread = [f"kubeconfig: {exc}"]
        problems += unread
    if output == "json":
        report = {
            "objects": [v.as_dict() for v in results],
            "problems": problems,
            "disruptive": any(v.disruptive for v in results),
        }
        typer.echo(json.dumps(report, indent=2))
    else:
        for verdict in results:
            typer.echo(_text(verdict))
        if not results and not problems:
            typer.echo("no RayCluster, RayJob or RayService to preview")
    for problem in problems:
        typer.echo(f"rayop: {problem}", err=True)
    refused = any(v.verdict == "refused" for v in results)
    if problems or refused:
        raise typer.Exit(EXIT_INCOMPLETE)
    if any(v.disruptive for v in results):
        raise typer.Exit(EXIT_DISRUPTIVE)
