"""Bootstrap speed, two benchmarks.

Flickr8k (the default): 1,000 image-level replicates of Kendall tau-b and tau-c on Flickr8k-Expert
(16,992 rows, CIDEr-D scores), target under 5 s; scipy on explicitly copied rows for comparison.

Synthetic (--synthetic): a 130,000-row meta-evaluation set (26,000 images × 5 captions, one human
rating 1–5 per caption, a continuous metric score with ~1% failed (NaN), 5 systems each writing one
caption per image), 1,000 replicates each, target under 10 s for (a):
  (a) every statistic of the canonical rating protocol with its draws (`rating_cells_with_draws`),
  (b) the system-level cells (`system_level_intervals`),
  (c) significance clusters of 25 metrics from their stored (float32) draws.
Each is timed --runs times (median shown) with this checkout's code and with the code of
OLD_COMMIT (the metaeval modules before replicates were computed in blocks, imported from git under
another name), and the largest difference between the two is printed. (a) draws its replicates
afresh each run; (b) is timed right after (a), which left its drawn replicates kept (as in
rating_dimension_cells), and alone.

Run from the repository root (`-m` puts it first on the import path, so the test data's loader,
tests/judgment_data.py, imports as `tests.judgment_data`):

    python -m bench.metaeval
    python -m bench.metaeval --synthetic [--runs 3] [--old-runs 3]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
from scipy import stats

from capbench_eval.metaeval import significance, system_level
from capbench_eval.metaeval.bootstrap import cluster_weights, forget_draws
from capbench_eval.metaeval.protocols import (
    RATING_STATISTICS,
    Protocol,
    protocol,
    rating_cells,
    rating_cells_with_draws,
)

ROOT = Path(__file__).resolve().parents[1]
REPLICATES, TARGET_SECONDS, SCIPY_SAMPLE = 1000, 5.0, 20
IMAGES, CAPTIONS, SYSTEMS, METRICS, SYNTHETIC_TARGET = 26_000, 5, 5, 25, 10.0
# The metaeval code before the replicates were computed in blocks (one Python call per replicate).
OLD_COMMIT = "da53b94e7a5b18612ba35202bba1c608b4b7033c"
OLD_MODULES = ("bootstrap", "kendall", "correlation", "protocols", "system_level", "significance")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", action="store_true", help="the 130k-row synthetic set, old code against new")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of the new code (median shown)")
    parser.add_argument("--old-runs", type=int, default=3, help="timed runs of the old code (0: do not run it)")
    arguments = parser.parse_args()
    return synthetic(arguments.runs, arguments.old_runs) if arguments.synthetic else flickr8k()


def flickr8k() -> int:
    from capbench_eval.metrics import get
    from catalog.importers.judgment_rows import judgment_rows
    from catalog.importers.registry import read_bundle
    from tests.judgment_data import judgment_data  # the Flickr8k files, decompressed once

    table = judgment_rows(read_bundle("flickr8k-expert", judgment_data() / "flickr8k"))
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


def synthetic_rows(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(human, metric, images, systems): IMAGES × CAPTIONS rows, caption k of every image written by
    system k; the rating is an integer 1–5 around a latent quality the metric also sees, with noise."""
    rng = np.random.default_rng(seed)
    rows = IMAGES * CAPTIONS
    images = np.repeat(np.arange(IMAGES), CAPTIONS)
    systems = np.tile(np.array([f"system-{k}" for k in range(SYSTEMS)]), IMAGES)
    quality = (
        rng.normal(0, 0.6, IMAGES)[images] + np.tile(np.linspace(-0.4, 0.4, SYSTEMS), IMAGES) + rng.normal(0, 0.8, rows)
    )
    human = np.clip(np.round(3 + 1.2 * quality), 1, 5)
    metric = quality + rng.normal(0, 0.9, rows)
    metric[rng.random(rows) < 0.01] = np.nan
    return human, metric, images, systems


def old_modules(commit: str = OLD_COMMIT) -> dict[str, ModuleType]:
    """The metaeval modules as of `commit`, imported as `metaeval_old.*` from a temporary folder (the
    package loaded from its own file, so the import path stays as it is)."""
    folder = Path(tempfile.mkdtemp(prefix="metaeval_old_")) / "metaeval_old"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name in OLD_MODULES:
        source = subprocess.run(
            ["git", "show", f"{commit}:evaluation/capbench_eval/metaeval/{name}.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (folder / f"{name}.py").write_text(source.replace("capbench_eval.metaeval.", "metaeval_old."))
    spec = importlib.util.spec_from_file_location(
        "metaeval_old", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["metaeval_old"] = package  # its modules import one another as metaeval_old.*
    spec.loader.exec_module(package)
    return {name: importlib.import_module(f"metaeval_old.{name}") for name in OLD_MODULES}


def _timed(function: Callable[[], object], runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return times, result


def _significance(draws: np.ndarray, significance_module: ModuleType) -> Callable[[], object]:
    """What the board does per column: metrics sorted best first, paired p-values, clusters."""
    values = np.nanmean(draws, axis=1).tolist()
    order = np.argsort(values)[::-1]
    sorted_draws = [draws[i] for i in order]
    sorted_values = [values[i] for i in order]

    def run() -> object:
        p_values = significance_module.paired_draws_p_values(sorted_draws)
        return p_values, significance_module.significance_clusters(sorted_values, p_values)

    return run


def _largest_difference(new: np.ndarray, old: np.ndarray) -> tuple[float, float]:
    """(largest absolute, largest relative) difference; NaN must sit at the same places."""
    new, old = np.asarray(new, float), np.asarray(old, float)
    if not np.array_equal(np.isnan(new), np.isnan(old)):
        return np.inf, np.inf
    finite = ~np.isnan(new)
    absolute = np.abs(new[finite] - old[finite])
    relative = absolute / np.maximum(np.abs(old[finite]), 1e-300)
    return float(absolute.max(initial=0.0)), float(relative.max(initial=0.0))


def synthetic(runs: int, old_runs: int) -> int:
    human, metric, images, systems = synthetic_rows()
    chosen = Protocol("synthetic", "canonical", "1", RATING_STATISTICS, "one row per judgment", "the item's references")
    load = os.getloadavg()
    print(
        f"rows: {len(human):,}, images: {IMAGES:,}, systems: {SYSTEMS}, failed scores: {int(np.isnan(metric).sum()):,}"
    )
    print(f"replicates: {chosen.replicates}, load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")

    def cells() -> object:
        return rating_cells_with_draws(chosen, human, metric, images)

    def system_cells() -> object:
        return system_level.system_level_intervals(
            human, metric, systems, images, replicates=chosen.replicates, seed=chosen.seed
        )

    # (a) with the replicates drawn afresh; (b) right after it, as rating_dimension_cells runs them
    # (the drawn replicates are kept: same clusters, same seed), and alone (drawn afresh).
    new: dict[str, list[float]] = {"a": [], "b after a": [], "b": []}
    for _ in range(runs):
        forget_draws()
        times, (intervals, draws) = _timed(cells, 1)  # type: ignore[misc]
        new["a"] += times
        times, system = _timed(system_cells, 1)
        new["b after a"] += times
        forget_draws()
        new["b"] += _timed(system_cells, 1)[0]
    # 25 metrics' stored draws: this metric's tau-b draws shifted and jittered per metric (float32).
    rng = np.random.default_rng(1)
    tau_b = draws["tau_b"]
    metric_draws = np.array(
        [tau_b + 0.002 * k + rng.normal(0, 0.002, len(tau_b)) for k in range(METRICS)], dtype=np.float32
    )
    new["c"], _ = _timed(_significance(metric_draws, significance), runs)
    old: dict[str, list[float]] = {}
    if old_runs:
        before = old_modules()
        old_protocols, old_system = before["protocols"], before["system_level"]
        old_chosen = old_protocols.Protocol(
            chosen.dataset, chosen.name, chosen.version, chosen.statistics, chosen.rows, chosen.references
        )
        old["a"], (old_intervals, old_draws) = _timed(  # type: ignore[misc]
            lambda: old_protocols.rating_cells_with_draws(old_chosen, human, metric, images), old_runs
        )
        old["b"], old_system_cells = _timed(
            lambda: old_system.system_level_intervals(
                human, metric, systems, images, replicates=chosen.replicates, seed=chosen.seed
            ),
            old_runs,
        )
        old["c"], _ = _timed(_significance(metric_draws, before["significance"]), old_runs)
        print("largest difference, new against old (absolute, relative):")
        for name in chosen.statistics:
            ends = [getattr(intervals[name], f) for f in ("value", "low", "high")]
            old_ends = [getattr(old_intervals[name], f) for f in ("value", "low", "high")]
            absolute, relative = _largest_difference(np.append(draws[name], ends), np.append(old_draws[name], old_ends))
            print(f"  {name}: {len(draws[name])} draws and the interval: {absolute:.1e}, {relative:.1e}")
        for name, interval in system.items():  # type: ignore[attr-defined]
            previous = old_system_cells[name]  # type: ignore[index]
            ends = [interval.value, interval.low, interval.high, interval.replicates]
            absolute, relative = _largest_difference(
                ends, [previous.value, previous.low, previous.high, previous.replicates]
            )
            print(f"  system {name}: the interval: {absolute:.1e}, {relative:.1e}")
    labels = {
        "a": "(a) rating_cells_with_draws, 4 statistics",
        "b after a": "(b) system_level_intervals right after (a)",
        "b": "(b) system_level_intervals alone",
        "c": f"(c) significance clusters, {METRICS} metrics",
    }
    for key, label in labels.items():
        line = f"{label}: new {statistics.median(new[key]):.3f} s (runs {', '.join(f'{t:.3f}' for t in new[key])})"
        if key in old:
            median_old = statistics.median(old[key])
            line += (
                f"; old {median_old:.3f} s (runs {', '.join(f'{t:.3f}' for t in old[key])}); "
                f"ratio {median_old / statistics.median(new[key]):.1f}x"
            )
        print(line)
    both = statistics.median(np.add(new["a"], new["b after a"]).tolist())
    line = f"one metric's cells, (a) then (b): new {both:.3f} s"
    if old:
        old_both = statistics.median(old["a"]) + statistics.median(old["b"])
        line += f"; old {old_both:.3f} s; ratio {old_both / both:.1f}x"
    print(line)
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    met = statistics.median(new["a"]) < SYNTHETIC_TARGET
    print(f"target (a) < {SYNTHETIC_TARGET:.0f} s: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
