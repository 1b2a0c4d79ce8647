"""The controller kit: what every Ray controller's pass is built from, in one idiom.

- ``pass_context``: the one shape of a pass (name, constructor, ``now``, events, status) every
  controller's context has, and where a controller differs.
- ``recorded_write``: one API write (or a create that may find the object there) and the Normal
  or Warning event KubeRay records for it.
- ``opening``: how the small controllers open a pass (gone, deleting, managedBy, behind our own
  write, parse), and the rule for a spec that does not parse.
- ``watches``: the watches of a Ray controller: its own kind and the kinds it owns.
- ``own_writes``: wires a controller's own-writes tracker: fed by its primary informer, re-enqueues
  on catch-up.
- ``settings``: every fixed interval a controller waits before it looks again, and how many pod
  calls one pass may have in flight.
- ``gate_checks``: refusal of gated spec fields: gate off, or feature unimplemented.
- ``cluster_access``: reading a RayCluster: wire-object metadata, the parsed model, and what
  KubeRay derives from it.
- ``auth_token``: the Ray auth token of a token-auth RayCluster, as every dashboard client sends
  it.
- ``names``: names of the objects KubeRay creates for a RayCluster, with its truncation rules.
- ``labels``: the label sets KubeRay puts on the objects of a RayCluster.
- ``ownership``: the ownerReference that makes a Ray resource the controller of what it creates,
  and the uid precondition that deletes only the object read.
"""
