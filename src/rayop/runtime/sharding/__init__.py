"""Several active replicas sharing one fleet: membership, assignment and safe handover.

Generic: the operator names its label keys (:class:`~rayop.runtime.sharding.keys.ShardKeys`),
its root kinds, where a root's objects live and how a request finds its root.

Modules:

- ``keys``: the label and annotation keys sharding writes, and the selectors built from them.
- ``rendezvous``: which replica owns an object key (rendezvous hashing).
- ``membership``: each replica's own Lease, and which replicas are alive.
- ``sharder``: the leader's loop that assigns roots to replicas and moves them.
- ``slim``: what the sharder keeps of a listed root (metadata, and whether it has a status).
- ``objects``: a root's objects, found (by label, or adopted by ownerReferences) and relabelled.
- ``gate``: which passes a replica may run, and the drain handshake that lets a root go.
- ``pass_record``: a JSON-lines record of every pass, and the overlap check over it.
- ``metrics``: the sharding metrics.
"""
