"""The options that place one operator replica in a cluster: leader election, namespaces, sharding.

:class:`ReplicaFlags` is an option group (see :mod:`rayop.cli.option_groups`) of ``rayop run``
and ``rayop up``: ``--enable-leader-election``, ``--leader-election-namespace`` and
``--watch-namespace``, with KubeRay's names, and rayop's ``--sharding`` (several active
replicas, each reconciling the roots assigned to it), ``--replica-id``, ``--pass-record`` and
the sharder's client budget (``--sharder-qps``, ``--sharder-burst``); :data:`KUBERAY_REPLICA` has KubeRay's defaults,
:data:`ONE_PROCESS_REPLICA` those of ``rayop up`` (no leader election: it is the only replica).
"""

from __future__ import annotations

import dataclasses
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from rayop.cli.flags import parse_bool, parse_namespaces
from rayop.cli.option_groups import OptionGroup

if TYPE_CHECKING:
    from rayop.controllers.assembly.operator_settings import OperatorSettings

__all__ = ["KUBERAY_REPLICA", "ONE_PROCESS_REPLICA", "ReplicaFlags"]

_N = TypeVar("_N", int, float)

EnableLeaderElectionOpt = Annotated[
    str,
    typer.Option("--enable-leader-election", help="Campaign for the leader Lease (true/false)."),
]
LeaderElectionNamespaceOpt = Annotated[
    str,
    typer.Option("--leader-election-namespace", help="Namespace of the Lease; empty: the pod's."),
]
ShardingOpt = Annotated[
    str,
    typer.Option(
        "--sharding",
        help="Share the fleet with the other replicas started with --sharding (true/false).",
    ),
]
ReplicaIdOpt = Annotated[
    str,
    typer.Option("--replica-id", help="This replica's id with --sharding; empty: the host name."),
]
PassRecordOpt = Annotated[
    str,
    typer.Option(
        "--pass-record", help="With --sharding, append every reconcile pass to this JSON-lines file."
    ),
]
_SHARDER_QPS = "With --sharding, the sharder's own request rate (lists, relabels); empty: 500."
SharderQpsOpt = Annotated[str, typer.Option("--sharder-qps", help=_SHARDER_QPS)]
_SHARDER_BURST = "With --sharding, the sharder's own request burst; empty: 1000."
SharderBurstOpt = Annotated[str, typer.Option("--sharder-burst", help=_SHARDER_BURST)]
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
    sharding: ShardingOpt = "false"
    replica_id: ReplicaIdOpt = ""
    pass_record: PassRecordOpt = ""
    sharder_qps: SharderQpsOpt = ""
    sharder_burst: SharderBurstOpt = ""

    def apply(self, settings: OperatorSettings) -> OperatorSettings:
        """Returns ``settings`` with these flags' leader election and namespaces.

        Raises:
            typer.BadParameter: ``--enable-leader-election`` or ``--sharding`` is not a boolean,
                ``--sharding`` is given without leader election, ``--replica-id``,
                ``--pass-record``, ``--sharder-qps`` or ``--sharder-burst`` without
                ``--sharding``, or the last two are not positive numbers.
        """
        from rayop.controllers.assembly.operator_settings import ShardingSettings

        sharding = None
        leader_election = parse_bool(self.enable_leader_election, flag="--enable-leader-election")
        if parse_bool(self.sharding, flag="--sharding"):
            if not leader_election:
                raise typer.BadParameter(
                    "--sharding needs --enable-leader-election=true: the elected replica assigns"
                    " objects to the others"
                )
            sharding = ShardingSettings(
                replica_id=self.replica_id or socket.gethostname(),
                pass_record=self.pass_record or None,
            )
            if self.sharder_qps:
                qps = _positive(self.sharder_qps, "--sharder-qps", float)
                sharding = dataclasses.replace(sharding, sharder_qps=qps)
            if self.sharder_burst:
                burst = _positive(self.sharder_burst, "--sharder-burst", int)
                sharding = dataclasses.replace(sharding, sharder_burst=burst)
        elif self.replica_id or self.pass_record or self.sharder_qps or self.sharder_burst:
            raise typer.BadParameter(
                "--replica-id, --pass-record, --sharder-qps and --sharder-burst need --sharding"
            )
        return dataclasses.replace(
            settings,
            enable_leader_election=leader_election,
            leader_election_namespace=self.leader_election_namespace or None,
            watch_namespaces=parse_namespaces(self.watch_namespace),
            sharding=sharding,
        )


def _positive(value: str, flag: str, kind: type[_N]) -> _N:
    """Parses ``value`` as a positive ``kind``; raises typer.BadParameter naming ``flag``."""
    try:
        parsed = kind(value)
    except ValueError:
        raise typer.BadParameter(f"{flag} must be a positive number, got {value!r}") from None
    if parsed <= 0:
        raise typer.BadParameter(f"{flag} must be a positive number, got {value!r}")
    return parsed


KUBERAY_REPLICA = ReplicaFlags()
"""KubeRay's defaults (``rayop run``): leader election on, every namespace."""
ONE_PROCESS_REPLICA = ReplicaFlags(enable_leader_election="false")
"""``rayop up``'s defaults: the only replica, so no leader election; every namespace."""
