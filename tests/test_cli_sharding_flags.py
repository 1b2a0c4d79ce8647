"""``--sharding``, ``--replica-id``, ``--pass-record`` and the sharder's client budget become the
operator's sharding settings."""

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


def test_the_sharder_has_a_budget_of_its_own() -> None:
    default = ReplicaFlags(sharding="true", replica_id="r1").apply(OperatorSettings()).sharding
    assert default is not None
    assert (default.sharder_qps, default.sharder_burst) == (500.0, 1000)
    given = ReplicaFlags(sharding="true", replica_id="r1", sharder_qps="50.5", sharder_burst="70")
    chosen = given.apply(OperatorSettings()).sharding
    assert chosen is not None
    assert (chosen.sharder_qps, chosen.sharder_burst) == (50.5, 70)


@pytest.mark.parametrize(
    "flags",
    [
        ReplicaFlags(sharding="true", enable_leader_election="false"),
        ReplicaFlags(replica_id="r1"),
        ReplicaFlags(pass_record="/tmp/x"),
        ReplicaFlags(sharding="maybe"),
        ReplicaFlags(sharder_qps="50"),
        ReplicaFlags(sharding="true", sharder_qps="fast"),
        ReplicaFlags(sharding="true", sharder_qps="0"),
        ReplicaFlags(sharding="true", sharder_burst="1.5"),
        ReplicaFlags(sharding="true", sharder_burst="-1"),
    ],
)
def test_inconsistent_sharding_flags_are_usage_errors(flags: ReplicaFlags) -> None:
    with pytest.raises(typer.BadParameter):
        flags.apply(OperatorSettings())
