"""The FT.* search dialect: value encoding, command building, reply parsing, detection.

Everything here is pure (no I/O) and emits only what valkey-search 1.0.2 accepts unless
a newer dialect was detected.
"""
