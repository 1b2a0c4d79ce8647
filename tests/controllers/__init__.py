"""Unit tests of the controllers and their shared parts."""
