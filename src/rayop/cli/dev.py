"""``rayop dev real-cluster up|down``: a real kube-apiserver with kwok nodes, for development.

``up`` starts kine, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (built by
``scripts/controlplane-build``) as background processes, writes ``<dir>/kubeconfig`` and
returns; ``down`` stops them using the pid file in ``<dir>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rayop.cli.app import app

dev_app = typer.Typer(help="Developer tools.", no_args_is_help=True)
real_cluster_app = typer.Typer(
    help="A real control plane (kube-apiserver, kwok) on loopback.", no_args_is_help=True
)
dev_app.add_typer(real_cluster_app, name="real-cluster")
app.add_typer(dev_app, name="dev")

DEFAULT_DIR = Path(".rayop-real-cluster")

DirOpt = Annotated[
    Path,
    typer.Option("--dir", help="Working directory: kubeconfig, logs, pids and the kine database."),
]


@real_cluster_app.command("up")
def up(
    directory: DirOpt = DEFAULT_DIR,
    nodes: Annotated[int, typer.Option("--nodes", min=1, help="Fake kwok nodes.")] = 3,
    binaries: Annotated[
        Path | None,
        typer.Option(
            "--binaries",
            help="Directory of the built binaries; default: the controlplane-build cache.",
        ),
    ] = None,
) -> None:
    """Start a real control plane in the background; blocks until it serves."""
    from rayop.cli.realcluster import (
        RealCluster,
        RealClusterError,
        RealClusterSettings,
        default_binaries_dir,
    )

    settings = RealClusterSettings(
        workdir=directory, binaries=binaries or default_binaries_dir(), nodes=nodes
    )
    try:
        info = RealCluster(settings).start()
    except RealClusterError as exc:
        typer.echo(f"real-cluster up failed: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"kube-apiserver at {info.server}")
    typer.echo(f"export KUBECONFIG={info.kubeconfig}")


@real_cluster_app.command("down")
def down(directory: DirOpt = DEFAULT_DIR) -> None:
    """Stop the control plane that ``up`` started in --dir; blocks until it has exited."""
    from rayop.cli.realcluster_procs import stop_cluster

    stopped = stop_cluster(directory.resolve())
    typer.echo(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
