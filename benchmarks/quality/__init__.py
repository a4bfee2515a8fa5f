"""Retrieval-quality benchmark on LoCoMo conversations (issue 8 quality scenario, issue 11)."""
