"""Query plans for filtered KNN on RediSearch (pure).

RediSearch runs a filtered KNN either as an exact scan over the filter's matches
(``ADHOC_BF``) or as HNSW searches in growing batches whose results are filtered
(``BATCHES``), and picks one by a built-in heuristic. Measured on Valkey 8.0 with
RediSearch 2.10 (384-dim vectors, ``KNN 50``), the heuristic scans when the filter keeps
most of a 10k index (2.4 ms where batches take 0.3 ms), and chooses well for selective
filters. This module overrides it only where a simple cost model says batches are
clearly cheaper: the scan costs about ``0.23 ms`` per thousand matching memories,
batches about ``0.25 + 0.0024 * k / r`` ms where ``r`` is the share of the index the
filter keeps. valkey-search accepts no plan option and chooses its own strategy.
"""

from __future__ import annotations

SCAN_MS_PER_DOC = 0.00023
BATCH_BASE_MS = 0.25
BATCH_MS_PER_K = 0.0024
MARGIN = 1.5  # override the server only when batches look at least this much cheaper


def hybrid_policy(subset: int | None, index_docs: int | None, k: int) -> str | None:
    """``"BATCHES"`` when the filter keeps ``subset`` of ``index_docs`` memories and
    batched HNSW search is clearly cheaper than a scan; ``None`` (the server's own
    choice) otherwise, including when either size is unknown."""
    if subset is None or index_docs is None or subset <= 0 or index_docs <= 0:
        return None
    share = min(1.0, subset / index_docs)
    scan = SCAN_MS_PER_DOC * subset
    batches = BATCH_BASE_MS + BATCH_MS_PER_K * k / share
    return "BATCHES" if batches * MARGIN <= scan else None
