"""Tests of the deploy manifests, the image and the Helm chart."""
