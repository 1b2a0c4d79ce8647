"""A replica with ``--sharding`` and one without never run side by side: :func:`check_shard_fence`.

Both would reconcile the same objects (the one without sharding reconciles every object, the
sharded ones their shares), so ``rayop run`` refuses to start in either mixed case, and says
why:

- without ``--sharding``: when the sharder's leader Lease (``<leader-election-id>-sharder``, held
  by one of the sharded replicas while any runs) is held and renewed, sharded replicas run;
- with ``--sharding``: when the leader Lease of unsharded replicas (``--leader-election-id``) is
  held and renewed, an unsharded replica leads.

A Lease left held by a crashed process is told from a live one by watching it for one Lease
duration (start-up waits that long only when such a Lease exists); a stopped replica releases
its Lease, which costs no wait. Both checks only GET one Lease, which leader election's RBAC
already allows.
"""

from __future__ import annotations

from rayop.controllers.assembly.operator_settings import OperatorSettings
from rayop.controllers.assembly.sharding import SHARDER_LEASE_SUFFIX
from rayop.controllers.config.startup_checks import StartupCheckError
from rayop.kube.client import KubeClient
from rayop.runtime.clock import MONOTONIC, Clock
from rayop.runtime.manager import default_lease_namespace
from rayop.runtime.sharding.membership import renewed_holder


async def check_shard_fence(
    client: KubeClient, settings: OperatorSettings, *, clock: Clock = MONOTONIC
) -> None:
    """Raises if a replica of the other mode runs; blocks up to one Lease duration.

    Raises:
        StartupCheckError: a replica of the other mode holds its Lease.
    """
    namespace = settings.leader_election_namespace or default_lease_namespace()
    if settings.sharding is None:
        sharder_lease = settings.leader_election_id + SHARDER_LEASE_SUFFIX
        holder = await renewed_holder(client, namespace, sharder_lease, clock=clock)
        if holder is not None:
            raise StartupCheckError(
                f"replicas started with --sharding are running (Lease {namespace}/"
                f"{sharder_lease} held by {holder}); a replica without --sharding would "
                "reconcile their objects too. Start this one with --sharding, or stop them first."
            )
        return
    holder = await renewed_holder(client, namespace, settings.leader_election_id, clock=clock)
    if holder is not None:
        raise StartupCheckError(
            f"a replica without --sharding leads (Lease {namespace}/{settings.leader_election_id}"
            f" held by {holder}); a sharded replica would reconcile its objects too. Stop it, or "
            "start every replica with --sharding."
        )
