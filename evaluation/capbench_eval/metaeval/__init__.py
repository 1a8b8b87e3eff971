"""Meta-evaluation: how well a metric's scores agree with human judgments."""
