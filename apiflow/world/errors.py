"""Errors a world raises instead of answering as HTTP."""


class TransportError(Exception):
    """The request never became an HTTP exchange.

    ``kind`` is ``"network"`` for what a real client reports as a connection failure
    (the tool returns a network-error *result*), ``"invalid"`` for a request the client
    library refuses to send (the tool returns an ``execute failed: …`` *error*).
    """

    def __init__(self, message: str, kind: str = "network") -> None:
        super().__init__(message)
        self.kind = kind


class WorldDefinitionError(ValueError):
    """A world file is valid data but inconsistent (e.g. a rule on an undeclared route)."""
