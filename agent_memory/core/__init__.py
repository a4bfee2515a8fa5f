"""Sans-I/O core: operations are generators of effects, driven by a sync or async runner."""
