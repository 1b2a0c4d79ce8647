"""What the three controllers share: operator options and feature gates, the settings that
time their requeues, gate checks, RayCluster names, labels and spec accessors, registration, RBAC.

Modules and subpackages:

- ``cache_config``: what the operator's shared cache holds: KubeRay's label filters
  (``ray-operator/internal/managercache/cache.go``, v1.7.0).
- ``cluster_spec``: reading a RayCluster: wire-object metadata, the parsed model, and what KubeRay
  derives from it.
- ``configuration``: KubeRay v1.7.0's Configuration API (``config.ray.io/v1alpha1``
  ``Configuration``) as models.
- ``configuration_checks``: the checks a Configuration must pass beyond its types: it may not make
  pods Kubernetes refuses.
- ``configuration_file``: reads a KubeRay ``--config`` file into a
  :class:`~.configuration.Configuration`, or says where it is wrong.
- ``gate_checks``: refusal of gated spec fields: gate off, or feature unimplemented.
- ``gates``: KubeRay v1.7's feature gates (``--feature-gates``): names, defaults, overrides.
- ``go_json``: Go ``encoding/json`` output of a typed Kubernetes struct, computed from its wire
  dict.
- ``go_quantity``: Kubernetes resource quantities as Go's ``resource.Quantity`` writes them back to
  JSON.
- ``kuberay_metrics``: KubeRay's nine ``kuberay_*`` metrics, registered only with --enable-metrics.
- ``labels``: the label sets KubeRay puts on the objects of a RayCluster (keys:
  :mod:`rayop.api.keys`).
- ``names``: names of the objects KubeRay creates for a RayCluster, with its truncation rules.
- ``options``: operator settings that KubeRay reads from environment variables (the gates:
  :mod:`.gates`).
- ``own_writes``: wires a controller's own-writes tracker: fed by its primary informer, re-enqueues
  on catch-up.
- ``ownership``: the ownerReference that makes a Ray resource the controller of what it creates.
- ``pod_defaults``: the fleet-wide pod defaults of KubeRay's Configuration, and how KubeRay puts
  them on pods.
- ``rbac_rules``: the RBAC rules the operator needs: the one source of truth for deploy/rbac and the
  Helm chart.
- ``registration``: registers a Ray controller on a manager: the part of ``SetupWithManager`` every
  kind shares.
- ``settings``: when the three controllers requeue, and how many pod calls one pass may have in
  flight.
- ``spec_hash``: KubeRay's RayCluster spec hash (``GenerateHashWithoutReplicasAndWorkersToDelete``),
  bit for bit.
- ``startup_checks``: the checks KubeRay v1.7 makes against the API server before it starts its
  controllers.
"""
