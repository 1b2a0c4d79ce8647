"""What the operator process serves over HTTP: metrics, probes and admission webhooks.

- ``endpoints``: the manager's HTTP endpoints: ``/metrics`` and the ``/healthz`` / ``/readyz``
  probes.
- ``admission_server``: a validating admission webhook server: AdmissionReview v1 over HTTPS.
- ``serving_cert``: a self-managed serving certificate for the admission webhook server.
"""
