"""Model loading and the local model store."""
