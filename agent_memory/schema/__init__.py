"""How a memory is stored: key layout, fields, value tokens, lexical terms, server scripts.

Pure data and command building, below everything else but ``core``: the search dialect,
the backends and the store's operations all read and write memories through it.
"""
