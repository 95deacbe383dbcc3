"""Errors that reach the user as one clear line and exit code 2 (never a traceback)."""


class UsageError(Exception):
    """Bad input from the user: unknown task or model, bad bank, bad arguments or files."""
