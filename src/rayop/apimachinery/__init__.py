"""Kubernetes API concepts both the operator and the embedded control plane use (a leaf package).

The name mirrors ``k8s.io/apimachinery``. Nothing here imports another rayop package, so
``rayop.sim`` and the operator's layers can all stand on it.

Modules:

- ``objects``: the ``Obj`` / ``ObjView`` aliases for an object as JSON decodes it.
- ``quantity``: resource quantities (``500m``, ``2Gi``): parse, compare, add, format.
- ``labels``: label selectors (``matchLabels``/``matchExpressions`` and the string form).
- ``certs``: self-signed certificates made with the openssl CLI (CA and serving pairs).
- ``pod_resources``: a pod's total of a per-container amount (requests or limits), init and
  sidecar containers included.
- ``pod_requests``: a pod's effective requests, as the scheduler counts them.
- ``scheduling``: the filters kube-scheduler applies before it binds a pod, and its
  FailedScheduling message (the embedded plane's scheduler and ``rayop preview``'s capacity
  check share them).
"""
