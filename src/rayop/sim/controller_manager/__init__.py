"""The embedded kube-controller-manager: the batch Job controller, garbage collector, endpoints
and service-account controllers.

Modules and subpackages:

- ``batch_jobs``: the simulated Job controller (batch/v1): runs each Job's pods and keeps the Job's
  status.
- ``cert_issuer``: a simulated cert-manager: issues Certificates of ``selfSigned`` and ``ca``
  Issuers.
- ``cert_material``: x.509 material for the simulated cert-manager issuer, made with the openssl
  CLI.
- ``endpoints``: the simulated endpoints controllers: Endpoints and EndpointSlices follow ready
  pods.
- ``garbage_collector``: the simulated garbage collector: ownerReferences, propagation policies,
  namespace deletion.
- ``label_index``: indexes pods and Service selectors by label, so the endpoints controller never
  scans.
- ``serviceaccounts``: the simulated service-account controller: every active namespace gets a
  ``default`` ServiceAccount.
- ``volumes``: the PersistentVolume controller and a local-path provisioner, with kind's default
  StorageClass.
"""
