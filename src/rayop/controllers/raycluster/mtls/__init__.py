"""KubeRay v1.7.0's mTLS (``spec.tlsOptions``, gate ``RayClusterMTLS``) through cert-manager.

Modules and subpackages:

- ``certificates``: the cert-manager Issuers and Certificates of a RayCluster with mTLS, as KubeRay
  v1.7.0 builds them.
- ``discovery``: whether the API server serves cert-manager, asked once at startup as KubeRay's
  ``main.go`` does.
- ``names``: names, labels and constants of KubeRay v1.7.0's mTLS objects (``utils/constant.go``,
  ``util.go``).
- ``pod_tls``: the TLS settings KubeRay v1.7.0 adds to Ray pods when mTLS is on (``configureTLS``).
- ``readiness``: the check KubeRay v1.7.0's RayCluster controller makes before it creates a pod with
  mTLS on.
- ``sync``: KubeRay v1.7.0's ``raycluster-mtls`` controller: the cert-manager PKI of each
  RayCluster.
"""
