"""Unit tests of the RayJob controller: its steps, phases and helpers on fakes and virtual time."""
