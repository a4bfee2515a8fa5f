"""The ``AgentMemory`` facade: every tier over one client and one name, discoverable."""
