"""Tests of the kube client against a fake API server."""
