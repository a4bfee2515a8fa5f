"""The ``agent-memory`` command line."""
