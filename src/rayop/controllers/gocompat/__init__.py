"""Go-compatible encoding: KubeRay's RayCluster spec hash, bit for bit, and the spec its typed
updates write.

- ``go_json``: Go ``encoding/json`` output of a typed Kubernetes struct, computed from its wire
  dict (the struct layouts: ``go_types_raycluster_spec.json``, ``go_types_rayservice_spec.json``).
- ``spec_hash``: KubeRay's RayCluster spec hash (``GenerateHashWithoutReplicasAndWorkersToDelete``).
"""
