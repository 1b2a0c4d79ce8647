"""Tests of the controller machinery: informers, work queues, leader election, the manager."""
