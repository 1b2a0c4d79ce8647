"""KubeRay v1.7.0's mTLS (``spec.tlsOptions``, gate ``RayClusterMTLS``) through cert-manager.

``names.py`` holds the object names, labels and constants; ``certificates.py`` builds the
cert-manager Issuers and Certificates; ``pod_tls.py`` adds the TLS env, volume and init
container to Ray pods; ``readiness.py`` is the check the ``raycluster`` controller makes before
it creates pods; ``sync.py`` is the ``raycluster-mtls`` controller.
"""
