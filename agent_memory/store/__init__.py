"""The memory store: its operations (``ops``, sans-I/O generators of effects) and the
``MemoryStore`` / ``SyncMemoryStore`` classes that run them on a client."""
