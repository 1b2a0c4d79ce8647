"""Tests of the embedded control plane."""
