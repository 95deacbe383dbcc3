"""Machinery for tests and benchmarks, shipped so that users can run them against their own setups:
the provider stand-in (Anthropic- and OpenAI-shaped HTTP servers on loopback, played by an offline
model). Nothing in the library imports this package (tests/architecture checks it)."""
