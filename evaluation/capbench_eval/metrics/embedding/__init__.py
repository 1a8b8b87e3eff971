"""Embedding metrics: CLIP-S, RefCLIP-S, PAC-S, RefPAC-S, BERTScore, Polos."""

from capbench_eval.metrics.embedding import bertscore, clip_score, polos  # noqa: F401  (registers)
