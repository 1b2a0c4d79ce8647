"""The API conformance suite, run on the embedded control plane or RAYOP_CONFORMANCE_KUBECONFIG."""
