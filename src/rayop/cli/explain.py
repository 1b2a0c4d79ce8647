"""``rayop explain KIND/NAME``: a running operator's account of its last passes over one object.

The operator keeps, in memory, the last few passes of each object
(:mod:`rayop.runtime.decisions`) and serves them on its metrics server
(``/debug/decisions``); this command reads them and prints, per pass: when it ran and for how
long, what it waited for (expectations not met, an own write not yet seen, a dashboard not
answering, a gate), what it wrote and the Events that say why, and when it looks again.

Exit status: 0 when passes were shown; 1 when the operator kept none for the object (it has not
reconciled it since it started, or it is not the replica that owns it); 2 when the operator
could not be read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import typer

from rayop.cli.app import app

EXIT_SHOWN = 0
EXIT_NONE_KEPT = 1
EXIT_UNREADABLE = 2

KINDS = {
    "raycluster": "RayCluster",
    "rayclusters": "RayCluster",
    "rayjob": "RayJob",
    "rayjobs": "RayJob",
    "rayservice": "RayService",
    "rayservices": "RayService",
    "raycronjob": "RayCronJob",
    "raycronjobs": "RayCronJob",
}
"""The kinds ``KIND/NAME`` may name, as kubectl spells them (singular or plural, any case)."""


class ExplainError(Exception):
    """The operator's account could not be read (the message says why)."""


def parse_target(target: str) -> tuple[str, str]:
    """Returns ``(kind, name)`` of ``KIND/NAME``.

    Raises:
        ExplainError: not ``KIND/NAME``, or a kind rayop does not reconcile.
    """
    kind, sep, name = target.partition("/")
    if not sep or not name or "/" in name:
        raise ExplainError(f"{target!r}: want KIND/NAME, e.g. raycluster/my-cluster")
    found = KINDS.get(kind.lower().split(".", 1)[0])
    if found is None:
        raise ExplainError(f"{target!r}: rayop reconciles {', '.join(sorted(set(KINDS.values())))}")
    return found, name


async def read_passes(
    url: str, kind: str, namespace: str, name: str, timeout: float
) -> list[dict[str, Any]]:
    """GETs ``url``'s ``/debug/decisions`` for one object; blocks up to ``timeout`` seconds.

    Raises:
        ExplainError: no answer, an error status, or an answer that is not the account.
    """
    import aiohttp

    endpoint = url.rstrip("/") + "/debug/decisions"
    params = {"kind": kind, "namespace": namespace, "name": name}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(endpoint, params=params) as answer,
        ):
            body = await answer.read()
            status = answer.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ExplainError(f"cannot read the operator at {endpoint}: {exc or 'timed out'}") from exc
    if status == 404:
        raise ExplainError(f"{endpoint}: 404 (an operator older than rayop explain?)")
    if status != 200:
        raise ExplainError(f"{endpoint}: {status} {body[:200].decode(errors='replace')}")
    try:
        passes = json.loads(body)["passes"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ExplainError(f"{endpoint}: not an account of passes ({exc})") from exc
    if not isinstance(passes, list):
        raise ExplainError(f"{endpoint}: not an account of passes")
    return passes


def next_look(account: Mapping[str, Any]) -> str:
    """Says when the operator looks at the object again after the pass ``account``."""
    from rayop.runtime.decisions import next_look as look_again

    return look_again(
        str(account.get("outcome")), account.get("nextIn"), int(account.get("retries", 0))
    )


def format_passes(kind: str, namespace: str, name: str, passes: Sequence[Mapping[str, Any]]) -> str:
    """Renders an object's passes as text, oldest first, the next look of the last one at the end."""
    lines = [f"{kind} {namespace}/{name}: the operator's last {len(passes)} pass(es)"]
    for account in passes:
        seconds = float(account.get("seconds", 0.0))
        lines.append(
            f"- {account.get('started')} {account.get('controller')}: "
            f"{seconds * 1000:.1f} ms, {account.get('outcome')}"
        )
        for text in account.get("waited", ()):
            lines.append(f"    waited: {text}")
        for text in account.get("wrote", ()):
            lines.append(f"    wrote:  {text}")
        for text in account.get("events", ()):
            lines.append(f"    event:  {text}")
        if account.get("notesDropped"):
            lines.append(f"    ({account['notesDropped']} more notes not kept)")
        if account.get("repeated"):
            lines.append(
                f"    and {account['repeated']} more passes alike, the last at "
                f"{account.get('lastStarted')}"
            )
        if account.get("error"):
            lines.append(f"    error:  {account['error']}")
        lines.append(f"    next:   {next_look(account)}")
    return "\n".join(lines)


@app.command("explain")
def explain(
    target: Annotated[str, typer.Argument(help="The object, as KIND/NAME (e.g. raycluster/x).")],
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", help="The object's namespace.")
    ] = "default",
    operator: Annotated[
        str,
        typer.Option(help="The operator's metrics server (rayop run's --metrics-addr), as a URL."),
    ] = "http://127.0.0.1:8080",
    output: Annotated[
        str, typer.Option("--output", "-o", help="text, or json (the passes as served).")
    ] = "text",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the operator.")] = 10.0,
) -> None:
    """Show a running operator's last passes over one object: what it waited for, what it
    wrote and why, when it looks again."""
    try:
        kind, name = parse_target(target)
        if output not in ("text", "json"):
            raise ExplainError(f"--output {output!r}: want text or json")
        passes = asyncio.run(read_passes(operator, kind, namespace, name, timeout))
    except ExplainError as err:
        typer.echo(f"rayop explain: {err}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from err
    if output == "json":
        typer.echo(json.dumps({"passes": passes}, indent=2))
    elif passes:
        typer.echo(format_passes(kind, namespace, name, passes))
    if not passes:
        typer.echo(
            f"rayop explain: the operator at {operator} kept no pass of {kind} "
            f"{namespace}/{name} (not reconciled since it started, or another replica's)",
            err=True,
        )
        raise typer.Exit(EXIT_NONE_KEPT)
