"""Start and stop private Valkey/Redis server processes on loopback.

Used by the embedded default of :class:`agent_memory.AgentMemory` and by the test suite.
"""

from agent_memory.embedded.binaries import ServerBinary, find_search_module, find_server_binary
from agent_memory.embedded.launcher import ServerProcess, free_port, start_server

__all__ = [
    "ServerBinary",
    "ServerProcess",
    "find_search_module",
    "find_server_binary",
    "free_port",
    "start_server",
]
