"""Unit tests of the RayService controller: builders, and every step on fakes and a FakeClock."""
