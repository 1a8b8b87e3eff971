"""Bootstrap speed: 1,000 image-level replicates of Kendall tau-b and tau-c on Flickr8k-Expert
(16,992 rows, CIDEr-D scores), target under 5 s; scipy on explicitly copied rows for comparison.

    python bench/metaeval.py
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats

from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle
from evaluation.metaeval.bootstrap import cluster_weights
from evaluation.metaeval.protocols import protocol, rating_cells
from evaluation.metrics import get

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: its test data
from tests.judgment_data import judgment_data  # noqa: E402  (the Flickr8k files, decompressed once)

DATA = judgment_data() / "flickr8k"
REPLICATES, TARGET_SECONDS, SCIPY_SAMPLE = 1000, 5.0, 20


def main() -> int:
    table = judgment_rows(read_bundle("flickr8k-expert", DATA))
    rows, human, images = table.rows, table.human, table.items
    metric = np.array(get("cider_d").score(rows).scores)
    paper = replace(protocol("flickr8k-expert", "paper"), replicates=REPLICATES)
    started = time.perf_counter()
    cells = rating_cells(paper, human, metric, images)
    ours = time.perf_counter() - started
    tau_b, tau_c = cells["tau_b"], cells["tau_c"]
    weights, _ = cluster_weights(images, SCIPY_SAMPLE, seed=1)
    started = time.perf_counter()
    for row in weights:
        copies = np.repeat(np.arange(len(human)), row)
        stats.kendalltau(human[copies], metric[copies])
        stats.kendalltau(human[copies], metric[copies], variant="c")
    scipy_estimate = (time.perf_counter() - started) / SCIPY_SAMPLE * REPLICATES
    print(f"rows: {len(human):,}, images: {len(set(images)):,}, replicates: {REPLICATES}")
    print(
        f"tau-b {100 * tau_b.value:.1f} [{100 * tau_b.low:.1f}, {100 * tau_b.high:.1f}], "
        f"tau-c {100 * tau_c.value:.1f} [{100 * tau_c.low:.1f}, {100 * tau_c.high:.1f}]"
    )
    print(
        f"capbench (paper protocol: weights, one pair count for both taus): {ours:.2f} s (target < {TARGET_SECONDS:.0f} s: "
        f"{'met' if ours < TARGET_SECONDS else 'NOT met'})"
    )
    print(
        f"scipy on copied rows, extrapolated from {SCIPY_SAMPLE} replicates: {scipy_estimate:.2f} s "
        f"(ratio {scipy_estimate / ours:.1f}x)"
    )
    return 0 if ours < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
