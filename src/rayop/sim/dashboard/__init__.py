"""Simulated Ray heads: the dashboard, agent and Serve HTTP surfaces of every ready head pod,
their Jobs and Serve state, and KubeRay's K8sJobMode submitter pods.
"""
