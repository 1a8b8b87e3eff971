"""Embedding metrics: CLIP-S, RefCLIP-S, PAC-S, RefPAC-S, BERTScore."""
from evaluation.metrics.embedding import bertscore, clip_score  # noqa: F401  (registers)
