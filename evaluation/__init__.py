"""CapBench evaluation library: metrics and meta-evaluation. Never imports Django."""
