"""End-to-end tests: the operator against the embedded control plane."""
