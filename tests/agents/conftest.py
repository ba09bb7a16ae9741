"""Fixtures of the agents' tests: a client of a daemon of its own (tests/client's)."""

from tests.client.conftest import client

__all__ = ["client"]
