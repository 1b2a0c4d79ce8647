"""The options of the embedded control plane that ``rayop apiserver`` and ``rayop up`` share.

:class:`ControlPlaneFlags` is an option group (see :mod:`rayop.cli.option_groups`): where the
embedded API server listens and what it writes; :meth:`~ControlPlaneFlags.control_plane` builds
the (not yet started) server. The simulation itself is imported only when a command runs, so
``rayop --help`` stays light.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.option_groups import OptionGroup

if TYPE_CHECKING:
    from rayop.sim.apiserver.faults import Faults
    from rayop.sim.controlplane import EmbeddedControlPlane
    from rayop.sim.nodes.kubelet import KubeletConfig

__all__ = ["ControlPlaneFlags", "PodReadyDelayOpt"]

PodReadyDelayOpt = Annotated[
    float, typer.Option("--pod-ready-delay", help="Simulated seconds from Running to Ready.")
]


@dataclass(frozen=True, kw_only=True)
class ControlPlaneFlags(OptionGroup):
    """Where the embedded API server listens, and the files it writes."""

    host: Annotated[
        str,
        typer.Option("--host", help="Address of the embedded API server (loopback by default)."),
    ] = "127.0.0.1"
    port: Annotated[
        int, typer.Option("--port", help="Port of the embedded API server (0: pick a free one).")
    ] = 0
    kubeconfig_out: Annotated[
        Path | None, typer.Option("--kubeconfig-out", help="Where to write the kubeconfig.")
    ] = None
    state: Annotated[
        Path | None,
        typer.Option("--state", help="SQLite file that keeps every object across runs."),
    ] = None
    audit_log_path: Annotated[
        Path | None,
        typer.Option(
            "--audit-log-path",
            help="Append every API request (verb, resource, name, user, code) to this file, one "
            "JSON object a line.",
        ),
    ] = None
    real_ray: Annotated[
        bool,
        typer.Option(
            "--real-ray",
            help="Run pods' containers as local processes with the local Ray (pip install "
            '"rayop[ray]"; RAYOP_RAY_ENV names another virtualenv with Ray).',
        ),
    ] = False
    node_file: Annotated[
        list[Path],
        typer.Option(
            "--node-file",
            metavar="FILE",
            help="Add the nodes of a YAML file of Node manifests (labels, taints, "
            "status.allocatable), as kwok takes them (repeatable).",
        ),
    ] = field(default_factory=list)
    node_pool: Annotated[
        list[str],
        typer.Option(
            "--node-pool",
            metavar="PRESET[:COUNT]",
            help="Add COUNT GKE GPU nodes or TPU slices of a preset (repeatable): "
            "nvidia-tesla-t4, nvidia-l4, tpu-v4-2x2x1, tpu-v4-2x2x2, tpu-v6e-2x2, "
            "tpu-v6e-4x4 (or tpu-v6e-16). Pods requesting their accelerators tolerate "
            "their taints, as on GKE.",
        ),
    ] = field(default_factory=list)

    def control_plane(
        self,
        *,
        kubelet: KubeletConfig,
        tls: bool,
        token: str | None = None,
        faults: Faults | None = None,
    ) -> EmbeddedControlPlane:
        """Returns an embedded control plane on these flags; the caller starts and stops it.

        Args:
            kubelet: How the simulated kubelet runs pods.
            tls: Serve HTTPS (kubectl sends a bearer token only over HTTPS).
            token: The bearer token; one is generated when None.
            faults: Faults to inject; none when None.
        """
        import dataclasses

        from rayop.sim.controlplane import EmbeddedControlPlane

        if self.real_ray:
            from rayop.sim.nodes.processes.ray_install import RayNotInstalled, find_ray

            try:
                find_ray(kubelet.ray_env)
            except RayNotInstalled as exc:
                typer.echo(f"rayop: {exc}", err=True)
                raise typer.Exit(2) from exc
            kubelet = dataclasses.replace(kubelet, real_ray=True)
        accelerated = bool(self.node_file or self.node_pool)
        if accelerated:
            kubelet = _with_nodes(kubelet, self.node_file, self.node_pool)
        return EmbeddedControlPlane(
            host=self.host,
            port=self.port,
            state_path=self.state,
            token=token,
            kubelet=kubelet,
            faults=faults,
            kubeconfig_path=self.kubeconfig_out,
            tls=tls,
            extended_resource_toleration=accelerated,
            audit_log_path=self.audit_log_path,
        )


def _with_nodes(kubelet: KubeletConfig, files: list[Path], presets: list[str]) -> KubeletConfig:
    """Returns ``kubelet`` with the nodes of ``--node-file`` and ``--node-pool`` added; a bad
    file, preset or a node defined twice ends the command (one line, exit status 2)."""
    import dataclasses

    from rayop.sim.nodes.node_manifests import NodeManifestError, load_node_manifests
    from rayop.sim.nodes.node_presets import NodePresetError, preset_pools

    try:
        pools = tuple(pool for value in presets for pool in preset_pools(value))
        nodes = tuple(node for path in files for node in load_node_manifests(path))
    except (NodeManifestError, NodePresetError) as exc:
        typer.echo(f"rayop: {exc}", err=True)
        raise typer.Exit(2) from exc
    names = [
        *kubelet.node_names(),
        *(name for pool in (*kubelet.node_pools, *pools) for name in pool.node_names()),
        *(node.name for node in (*kubelet.extra_nodes, *nodes)),
    ]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        typer.echo(
            f"rayop: node {twice[0]} is defined twice (give a preset once, PRESET:COUNT for "
            "more; name file nodes apart from sim-node-N)",
            err=True,
        )
        raise typer.Exit(2)
    return dataclasses.replace(
        kubelet,
        node_pools=(*kubelet.node_pools, *pools),
        extra_nodes=(*kubelet.extra_nodes, *nodes),
    )
