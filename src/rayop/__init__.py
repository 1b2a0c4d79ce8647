"""rayop: the KubeRay operator (ray.io/v1) re-implemented in Python on asyncio.

Modules and subpackages:

- ``advise``: ``rayop advise``: the concurrency decision, made from a running operator's own
  metrics.
- ``api``: the ray.io/v1 API: typed models of RayCluster, RayJob and RayService, and their CRDs.
- ``bench``: load scenarios that measure whether raising --reconcile-concurrency helps, and their
  reports.
- ``cli``: the ``rayop`` command line.
- ``apimachinery``: Kubernetes concepts both the operator and the embedded plane use: quantities,
  label selectors, self-signed certificates, the object aliases (a leaf package).
- ``controllers``: the Ray controllers in one idiom, their assembly into one operator, and the Ray
  dashboard client.
- ``examples``: example manifests shipped with rayop: a RayCluster, a RayJob and a RayService to
  start from.
- ``kube``: talking to a Kubernetes API server: configuration, the async client, throttling, errors.
- ``preview``: knowing before applying: what the operator would create for a manifest
  (``rayop render``) and do to live objects (``rayop preview``), from the controllers' own code.
- ``runtime``: controller machinery with no knowledge of any particular operator: queues, rate
  limiters, the controller loop, informers, expectations, leader election, metrics and the manager.
- ``sim``: an embedded Kubernetes-compatible control plane: API server, simulated scheduler,
  kubelet, controller-manager and Ray dashboards, fault injection and an audit.
- ``testing``: a public test kit for code built on rayop: a virtual clock, an in-memory source,
  waiting helpers, the embedded control plane with rayop's CRDs, and rayop's operator running on it.
"""

__version__ = "0.1.0"
