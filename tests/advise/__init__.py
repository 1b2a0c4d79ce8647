"""Tests of rayop advise: reading an operator's metrics and the verdicts drawn from them."""
