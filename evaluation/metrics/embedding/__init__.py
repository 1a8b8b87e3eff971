"""Embedding metrics: CLIP-S, RefCLIP-S, PAC-S, RefPAC-S."""
from evaluation.metrics.embedding import clip_score  # noqa: F401  (registers)
