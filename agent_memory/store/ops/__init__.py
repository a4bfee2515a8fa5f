"""Operations of the memory store: generators of effects, one per public method."""
