"""Talking to a Kubernetes API server: configuration, the async client, throttling, errors."""
