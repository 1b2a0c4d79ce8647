"""Tests of rayop bench and the benchmark scripts' helpers."""
