"""The embedded kube-controller-manager: the batch Job, Deployment, ReplicaSet and StatefulSet
controllers, garbage collector, endpoints and service-account controllers, with the simulated cert-manager and Gateway implementation.

Modules and subpackages:

- ``batch_jobs``: the simulated Job controller (batch/v1): runs each Job's pods and keeps the Job's
  status.
- ``cert_issuer``: a simulated cert-manager: issues Certificates of ``selfSigned`` and ``ca``
  Issuers.
- ``cert_material``: x.509 material for the simulated cert-manager issuer, made with the openssl
  CLI.
- ``deployments``: the simulated Deployment controller (apps/v1): Deployment -> ReplicaSets -> pods.
- ``endpoints``: the simulated endpoints controllers: Endpoints and EndpointSlices follow ready
  pods.
- ``garbage_collector``: the simulated garbage collector: ownerReferences, propagation policies,
  namespace deletion.
- ``gateway_api``: what the embedded Gateway implementation shares: its controllerName and
  GatewayClasses, condition entries, ReferenceGrant checks.
- ``gateway_listeners``: the embedded Gateway implementation's verdict on a Gateway's listeners,
  and the Gateway's status.
- ``gateway_routes``: the embedded Gateway implementation's verdict on an HTTPRoute: attachment
  per parentRef (``Accepted``) and backend references (``ResolvedRefs``).
- ``gateways``: the embedded Gateway implementation: programs the Gateways and HTTPRoutes of the
  GatewayClasses ``rayop`` and ``istio``.
- ``label_index``: indexes pods and Service selectors by label, so the endpoints controller never
  scans.
- ``owned_controller``: what the workload controllers (ReplicaSet, Deployment, StatefulSet) share: an
  index of the objects each owner controls, the owner's key by uid, and one ``sync`` per owner
  event.
- ``replica_sets``: the simulated ReplicaSet controller (apps/v1): keeps ``spec.replicas`` pods of
  the template.
- ``resource_quotas``: the simulated resource-quota controller: each ResourceQuota's status (hard
  and used) recounted from the namespace's objects.
- ``serviceaccounts``: the simulated service-account controller: every active namespace gets a
  ``default`` ServiceAccount.
- ``stateful_sets``: the simulated StatefulSet controller (apps/v1): pods ``<name>-<ordinal>`` with
  their claims.
- ``volumes``: the PersistentVolume controller and a local-path provisioner, with kind's default
  StorageClass.
"""
