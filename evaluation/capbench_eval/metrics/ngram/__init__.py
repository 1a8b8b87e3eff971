"""BLEU-1..4, ROUGE-L and CIDEr-D on PTB-tokenised text, as pycocoevalcap computes them."""

from capbench_eval.metrics.ngram import bleu, cider, meteor, rouge  # noqa: F401  (registration)
