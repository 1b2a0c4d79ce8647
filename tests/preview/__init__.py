"""Tests of rayop.preview: recording writes, first passes, verdicts, manifests."""
