"""Krippendorff's α: how far annotators of a rating campaign agree beyond chance, for nominal,
ordinal, interval and ratio ratings with any number of annotators and missing ratings, and a 95%
interval by resampling units (docs/metaeval.md, "Live human evaluation").

From the coincidence-matrix definition (Krippendorff 2011, "Computing Krippendorff's
Alpha-Reliability"): a unit u with m_u ≥ 2 values adds, for every ordered pair of its values from
different annotators, 1/(m_u − 1) to the coincidence o[c, k] of their values c and k (units with
fewer than two values are not pairable and are dropped). With n_c = Σ_k o[c, k] and n = Σ_c n_c,

    α = 1 − (n − 1) · Σ_c Σ_k o[c, k] · δ²(c, k)  /  Σ_c Σ_k n_c · n_k · δ²(c, k)

with the difference function δ² of the level of measurement:

    nominal   δ² = 0 if c = k else 1
    ordinal   δ² = (Σ_{g=c..k} n_g − (n_c + n_k) / 2)²   (values in their order)
    interval  δ² = (c − k)²
    ratio     δ² = ((c − k) / (c + k))²   (values ≥ 0; 0 for c = k = 0)

α is NaN when no unit is pairable or there is no expected disagreement (one value throughout).

Computation: every pairable unit's contribution — its value counts and the coincidences between
its distinct values — is computed once; α under a vector of unit weights is then a weighted sum,
so a bootstrap replicate (units drawn with replacement) costs a matrix product. The ordinal δ²
depends on the marginals n_g, so it is recomputed per replicate: it equals (M_k − M_c)² with the
mid-rank M_c = Σ_{g≤c} n_g − n_c/2, which makes the expected disagreement O(values) per replicate.
Only the ratio level's expected disagreement costs O(values²) per replicate: fine for rating
scales, slow for thousands of distinct continuous values.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import sparse

from capbench_eval.metaeval.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, Interval, cluster_weights

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")
Rating = tuple[Hashable, Hashable, Any]  # (unit, annotator, value)
_CHUNK_CELLS = 4_000_000  # replicates × max(units, cells, values) held at once
_RATIO_BLOCK = 4_000_000  # values × block of the ratio δ² matrix built at once


@dataclass(frozen=True)
class _Units:
    """The pairable units' contributions, from which α under any unit weights is a weighted sum."""

    level: Level
    values: np.ndarray  # (V,) the distinct values (codes for nominal; sorted numbers otherwise)
    sizes: np.ndarray  # (U,) m_u: values in each unit
    counts: sparse.csr_matrix  # (V × U) how often each value occurs in each unit
    cells: np.ndarray  # (P × 2) value indices c < k of the coincidences with c ≠ k
    coincidences: sparse.csr_matrix  # (P × U) o[c, k] + o[k, c] contributed by each unit
    disagreement: np.ndarray | None  # (U,) Σ o·δ² per unit where δ² is fixed (all but ordinal)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _pairable_units(ratings: Iterable[Rating]) -> list[list[Any]]:
    """Each unit's values (missing ones dropped) where a unit has two or more, units in a fixed order."""
    by_unit: dict[Hashable, dict[Hashable, Any]] = {}
    for unit, annotator, value in ratings:
        if _missing(value):
            continue
        given = by_unit.setdefault(unit, {})
        if annotator in given:
            raise ValueError(f"annotator {annotator!r} rated unit {unit!r} twice")
        given[annotator] = value
    keys: list[Any] = list(by_unit)
    # Units in a fixed order (as cluster_weights orders clusters), so that a seed gives the same draws
    # whatever order the ratings came in; keys that cannot be compared keep their first-seen order.
    with contextlib.suppress(TypeError):
        keys.sort()
    return [list(by_unit[key].values()) for key in keys if len(by_unit[key]) >= 2]


def _coded(flat: list[Any], level: Level) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values and each value's index among them: codes in first-seen order (nominal),
    ranks (ordinal) or the sorted finite numbers (interval, ratio ≥ 0)."""
    if level == "nominal":
        code: dict[Any, int] = {}
        for value in flat:
            code.setdefault(value, len(code))
        return np.arange(len(code), dtype=float), np.array([code[value] for value in flat], dtype=np.intp)
    if level == "ordinal":
        ordered = sorted(set(flat))
        position = {value: rank for rank, value in enumerate(ordered)}
        return np.arange(len(ordered), dtype=float), np.array([position[value] for value in flat], dtype=np.intp)
    numbers = np.array([float(value) for value in flat])
    if not np.isfinite(numbers).all():
        raise ValueError("interval and ratio values must be finite numbers")
    if level == "ratio" and (numbers < 0).any():
        raise ValueError("ratio values must be ≥ 0")
    values, index = np.unique(numbers, return_inverse=True)
    return values, index.ravel()


def _prepare(ratings: Iterable[Rating], level: Level) -> _Units | None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    units = _pairable_units(ratings)
    if not units:
        return None
    flat = [value for unit in units for value in unit]
    values, index = _coded(flat, level)
    sizes = np.array([len(unit) for unit in units], dtype=np.intp)
    unit_of = np.repeat(np.arange(len(units)), sizes)
    counts = sparse.csr_matrix(
        (np.ones(len(flat)), (index, unit_of)), shape=(len(values), len(units))
    )  # duplicates are summed
    cells, coincidences = _coincidences(index, sizes, len(values))
    delta = None if level == "ordinal" else _fixed_delta(level, values, cells)
    disagreement = None if delta is None else np.asarray(coincidences.T @ delta).ravel()
    return _Units(level, values, sizes, counts, cells, coincidences, disagreement)


def _coincidences(index: np.ndarray, sizes: np.ndarray, values: int) -> tuple[np.ndarray, sparse.csr_matrix]:
    """The off-diagonal coincidences of every unit: each unordered pair of a unit's values with
    c ≠ k adds 2/(m_u − 1) to cell (min, max) (o[c, k] and o[k, c] together)."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rows, cell_ids, weights = [], [], []
    for size in np.unique(sizes):
        units = np.flatnonzero(sizes == size)
        block = index[starts[units][:, None] + np.arange(size)]  # (units of this size × size)
        first, second = np.triu_indices(int(size), k=1)
        c, k = block[:, first], block[:, second]
        low, high = np.minimum(c, k), np.maximum(c, k)
        keep = low != high
        rows.append(np.broadcast_to(units[:, None], c.shape)[keep])
        cell_ids.append((low * values + high)[keep])
        weights.append(np.full(int(keep.sum()), 2.0 / (size - 1)))
    cell_id = np.concatenate(cell_ids)
    unique, column = np.unique(cell_id, return_inverse=True)
    cells = np.stack([unique // values, unique % values], axis=1)
    coincidences = sparse.csr_matrix(
        (np.concatenate(weights), (column.ravel(), np.concatenate(rows))), shape=(len(unique), len(sizes))
    )
    return cells, coincidences


def _fixed_delta(level: Level, values: np.ndarray, cells: np.ndarray) -> np.ndarray:
    c, k = values[cells[:, 0]], values[cells[:, 1]]
    if level == "nominal":
        return np.ones(len(cells))
    if level == "interval":
        return (c - k) ** 2
    total = c + k
    return np.divide(c - k, total, out=np.zeros_like(total), where=total != 0) ** 2


def _alphas(units: _Units, weights: np.ndarray) -> np.ndarray:
    """α under each row of (replicates × units) `weights`; NaN where nothing varies."""
    total = weights @ units.sizes  # n
    marginal = np.asarray(units.counts @ weights.T).T  # (replicates × V) n_c
    if units.disagreement is not None:
        observed = weights @ units.disagreement
    else:  # ordinal: δ² from this replicate's mid-ranks
        mid = np.cumsum(marginal, axis=1) - marginal / 2
        coincide = np.asarray(units.coincidences @ weights.T).T  # (replicates × P)
        gap = mid[:, units.cells[:, 1]] - mid[:, units.cells[:, 0]]
        observed = (coincide * gap**2).sum(axis=1)
    expected = _expected(units, marginal, total)
    varied = (marginal > 0).sum(axis=1) >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (total - 1) * observed / expected
    return np.where(varied, alpha, np.nan)


def _expected(units: _Units, marginal: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Σ_c Σ_k n_c n_k δ²(c, k) for each replicate."""
    if units.level == "nominal":
        return total**2 - (marginal**2).sum(axis=1)
    if units.level in ("interval", "ordinal"):
        # Σ_c Σ_k n_c n_k (x_c − x_k)² = 2 n Σ_c n_c (x_c − x̄)², x the values or the mid-ranks.
        x = units.values[None, :] if units.level == "interval" else np.cumsum(marginal, axis=1) - marginal / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = (marginal * x).sum(axis=1, keepdims=True) / total[:, None]
        return 2 * total * (marginal * (x - mean) ** 2).sum(axis=1)
    values = units.values
    expected = np.zeros(len(marginal))
    step = max(1, _RATIO_BLOCK // len(values))
    for begin in range(0, len(values), step):
        block = values[begin : begin + step]
        total_ck = values[:, None] + block[None, :]
        delta = np.divide(values[:, None] - block[None, :], total_ck, out=np.zeros_like(total_ck), where=total_ck != 0)
        expected += ((marginal @ delta**2) * marginal[:, begin : begin + step]).sum(axis=1)
    return expected


def krippendorff_alpha(ratings: Iterable[Rating], level: Level = "interval") -> float:
    """Krippendorff's α of `(unit, annotator, value)` triples; a missing rating is simply absent (a
    value of None or NaN counts as absent too). Values are any hashables for "nominal", mutually
    ordered values for "ordinal", and numbers for "interval" and "ratio" (≥ 0)."""
    units = _prepare(ratings, level)
    if units is None:
        return math.nan
    return float(_alphas(units, np.ones((1, len(units.sizes))))[0])


def krippendorff_alpha_interval(
    ratings: Iterable[Rating],
    level: Level = "interval",
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
) -> Interval:
    """α with a percentile interval from `replicates` bootstrap replicates that draw the pairable
    units with replacement (as many as there are) and recompute α on the draw. This is a plain unit
    bootstrap, not Hayes & Krippendorff's (2007) algorithm, which resamples pairs of values within
    the observed coincidences; both treat the units as the sampled items. Replicates in which α is
    undefined (one value throughout) are left out; `replicates` in the result says how many remained."""
    units = _prepare(ratings, level)
    if units is None:
        return Interval(value=math.nan, low=math.nan, high=math.nan, replicates=0, level=confidence)
    count = len(units.sizes)
    value = float(_alphas(units, np.ones((1, count)))[0])
    if replicates < 1:
        return Interval(value=value, low=math.nan, high=math.nan, replicates=0, level=confidence)
    draws, _ = cluster_weights(range(count), replicates, seed)
    chunk = max(1, _CHUNK_CELLS // max(count, len(units.cells), len(units.values)))
    alphas = np.concatenate(
        [_alphas(units, draws[begin : begin + chunk].astype(float)) for begin in range(0, replicates, chunk)]
    )
    alphas = alphas[~np.isnan(alphas)]
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(alphas, [tail, 100 - tail]) if len(alphas) else (math.nan, math.nan)
    return Interval(value=value, low=float(low), high=float(high), replicates=len(alphas), level=confidence)
