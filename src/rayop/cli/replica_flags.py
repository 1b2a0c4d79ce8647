"""The options that place one operator replica in a cluster: leader election and namespaces.

:class:`ReplicaFlags` is an option group (see :mod:`rayop.cli.option_groups`) of ``rayop run``
and ``rayop up``: ``--enable-leader-election``, ``--leader-election-namespace`` and
``--watch-namespace``, with KubeRay's names; :data:`KUBERAY_REPLICA` has KubeRay's defaults,
:data:`ONE_PROCESS_REPLICA` those of ``rayop up`` (no leader election: it is the only replica).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from rayop.cli.flags import parse_bool, parse_namespaces
from rayop.cli.option_groups import OptionGroup

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings

__all__ = ["KUBERAY_REPLICA", "ONE_PROCESS_REPLICA", "ReplicaFlags"]

EnableLeaderElectionOpt = Annotated[
    str,
    typer.Option("--enable-leader-election", help="Campaign for the leader Lease (true/false)."),
]
LeaderElectionNamespaceOpt = Annotated[
    str,
    typer.Option("--leader-election-namespace", help="Namespace of the Lease; empty: the pod's."),
]
WatchNamespaceOpt = Annotated[
    str,
    typer.Option("--watch-namespace", help="Comma-separated namespaces to watch; empty: all."),
]


@dataclass(frozen=True, kw_only=True)
class ReplicaFlags(OptionGroup):
    """Leader election and the watched namespaces (KubeRay's defaults)."""

    enable_leader_election: EnableLeaderElectionOpt = "true"
    leader_election_namespace: LeaderElectionNamespaceOpt = ""
    watch_namespace: WatchNamespaceOpt = ""

    def apply(self, settings: OperatorSettings) -> OperatorSettings:
        """Returns ``settings`` with these flags' leader election and namespaces.

        Raises:
            typer.BadParameter: ``--enable-leader-election`` is not a boolean.
        """
        return dataclasses.replace(
            settings,
            enable_leader_election=parse_bool(
                self.enable_leader_election, flag="--enable-leader-election"
            ),
            leader_election_namespace=self.leader_election_namespace or None,
            watch_namespaces=parse_namespaces(self.watch_namespace),
        )


KUBERAY_REPLICA = ReplicaFlags()
"""KubeRay's defaults (``rayop run``): leader election on, every namespace."""
ONE_PROCESS_REPLICA = ReplicaFlags(enable_leader_election="false")
"""``rayop up``'s defaults: the only replica, so no leader election; every namespace."""
