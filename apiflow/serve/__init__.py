"""Serve a world over real HTTP on loopback: the same pure dispatcher behind a socket."""

from apiflow.serve.http import WorldServer

__all__ = ["WorldServer"]
