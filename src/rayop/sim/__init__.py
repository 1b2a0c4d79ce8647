"""An embedded Kubernetes-compatible control plane: API server, simulated scheduler, kubelet,
controller-manager and Ray dashboards, fault injection and an audit. It never imports the
operator.

Subpackages, each importing only those below it (an import-linter layers contract keeps it so):

- ``controlplane``: (a module) assembles everything into :class:`EmbeddedControlPlane`.
- ``heap``: (a module) the freezer that keeps ``rayop apiserver``'s cyclic collector from
  stopping the server for seconds at tens of thousands of objects.
- ``apiserver``: the HTTP face (aiohttp app, CRUD, watch, patch, protobuf, tables, discovery,
  services proxy, tokens, RBAC, TLS, kubeconfig) with fault injection and the audit; uses
  ``storage``.
- ``dashboard``: simulated Ray heads behind the services proxy, and the K8sJobMode submitter.
- ``controller_manager``: batch Jobs, garbage collector, endpoints, service accounts.
- ``nodes``: the scheduler, the kubelet and the pod statuses it reports.
- ``storage``: the object store (object table and change feed, watch hub, write and delete
  paths, aliased resources, SQLite persistence) and ``controller_base``, the base of every
  in-process controller.
- ``admission``: what happens to an object before it is stored (CRD schemas, defaults,
  object-meta validation).
- ``machinery``: the shared vocabulary (served resources, Status errors, selectors,
  timestamps).

``dashboard`` and ``controller_manager`` are independent of each other and of ``apiserver``.
"""
