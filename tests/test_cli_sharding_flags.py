"""``--sharding``, ``--replica-id`` and ``--pass-record`` become the operator's sharding settings."""

from __future__ import annotations

import socket

import pytest
import typer

from rayop.cli.replica_flags import KUBERAY_REPLICA, ONE_PROCESS_REPLICA, ReplicaFlags
from rayop.controllers.assembly.operator_settings import OperatorSettings, ShardingSettings


def test_sharding_is_off_by_default_in_run_and_up() -> None:
    assert KUBERAY_REPLICA.apply(OperatorSettings()).sharding is None
    assert ONE_PROCESS_REPLICA.apply(OperatorSettings()).sharding is None


def test_sharding_takes_the_replica_id_or_the_host_name() -> None:
    on = ReplicaFlags(sharding="true", replica_id="r1", pass_record="/tmp/r1.jsonl")
    assert on.apply(OperatorSettings()).sharding == ShardingSettings("r1", "/tmp/r1.jsonl")
    named = ReplicaFlags(sharding="true").apply(OperatorSettings()).sharding
    assert named == ShardingSettings(socket.gethostname())


@pytest.mark.parametrize(
    "flags",
    [
        ReplicaFlags(sharding="true", enable_leader_election="false"),
        ReplicaFlags(replica_id="r1"),
        ReplicaFlags(pass_record="/tmp/x"),
        ReplicaFlags(sharding="maybe"),
    ],
)
def test_inconsistent_sharding_flags_are_usage_errors(flags: ReplicaFlags) -> None:
    with pytest.raises(typer.BadParameter):
        flags.apply(OperatorSettings())
