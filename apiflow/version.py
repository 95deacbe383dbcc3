"""The package's version, in a module of its own so that any layer can name it.

``pyproject.toml`` reads it from here (one place to change); trial records carry it in their
harness version (``apiflow.agent.ids``).
"""

__version__ = "0.1.0"
