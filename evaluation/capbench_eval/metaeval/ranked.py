"""Two variables' rows under many weightings at once: the bootstrap's replicates of the rank
statistics (Kendall's pair counts, Spearman's weighted mid-ranks) without a Python loop per
replicate or per row.

Only the weights change from one replicate to the next, never the order of the values; so every
sort, group boundary and search position is computed once (`RankedRows`), and a block of weightings
costs gathers and cumulative sums over the rows in that fixed order (`RankedRows.weigh`).

Weights are given per column (a cluster): row i's weight in weighting r is `weights[r, column[i]]`.
Integer weights (bootstrap multiplicities) are summed in int64, so pair counts and rank sums are
exact; others in float64.

- Group sums. Rows sorted by the variable with more distinct values (x), ties by the other (y):
  a cumulative sum of the weights gives, at x's group boundaries, the weight of each x value, and
  at the (x, y) cell boundaries the weight of each cell; y's group sums come from a (columns × y
  values) count matrix when that is small, else from y's own sorted order. Tied pairs are
  Σ_groups (S² − Σw²)/2.
- Discordant pairs, by the bits of y's dense rank (y has few distinct values: human scales have
  4 to 12): a pair with y_i > y_j is counted at the highest bit b where their ranks differ, where
  they share the prefix p = y >> (b + 1), i has bit b set and j not. At bit b, rows sorted by
  (p, x): each row of one side adds its weight times the cumulated weight of the other side's
  rows in its prefix on the discordant side of its x (strictly). O(rows · log2(y values)) per
  weighting; with many values on both sides (up to 2**17 at 130,000 rows) the same code is the
  O(n log n) path.
- Mid-ranks: a row's weighted mid-rank is (weight before its value) + (S + 1)/2; 2 × (rank − (N +
  1)/2) = (cumulated weight at its group's start) + (at its end) − N is an integer, so Spearman's
  sums of squares and products are too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

# Integer sums stay exact in int64 while N (the weighted rows) is below this: the largest is
# Σ w·(2·rank)² ≤ 4·N³ (Spearman), which must stay below 2**63.
EXACT_ROWS = 2**20
# y's group sums by a (columns × y values) matrix product when it holds at most this many cells per row.
MATRIX_CELLS_PER_ROW = 4


@dataclass(frozen=True)
class Side:
    """One variable under a block of k weightings (arrays of k values). S: the weight of a value."""

    within: np.ndarray  # Σ over its values of S² (= twice the pairs tied in it + Σw²)
    distinct: np.ndarray  # the number of values of positive weight
    rank_squares: np.ndarray | None  # Σ w·(2r − N − 1)², r the row's weighted mid-rank


@dataclass(frozen=True)
class Weighed:
    """A block of k weightings of `RankedRows` (arrays of k values, `moments` k × 5). `first` and
    `second` are the two variables in the order RankedRows was given them."""

    total: np.ndarray  # N, the weighted number of rows
    squares: np.ndarray  # Σ w²
    first: Side
    second: Side
    tied_both: np.ndarray  # pairs tied in both variables
    discordant: np.ndarray  # pairs ordered one way by first and the other way by second
    moments: np.ndarray | None  # Σw·a, Σw·b, Σw·a², Σw·b², Σw·a·b; a, b: first, second minus their row means
    rank_products: np.ndarray | None  # Σ w·(2r₁ − N − 1)(2r₂ − N − 1)


def _centred_ranks(sums: np.ndarray, total: np.ndarray) -> np.ndarray:
    """2 × (weighted mid-rank − (N + 1)/2) of each value from the (k × values) weights of the
    values in increasing order: 2·(weight before it) + S − N."""
    before = np.cumsum(sums, axis=1) - sums
    return 2 * before + sums - total[:, None]


class _Workspace:
    """Arrays reused from one block to the next: a fresh (k × rows) array per step and block makes
    the allocator map and fault in new pages every time, which took twice as long as the sums."""

    def __init__(self) -> None:
        self._flat: dict[tuple[str, np.dtype], np.ndarray] = {}

    def __call__(self, name: str, shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
        size = shape[0] * shape[1]
        flat = self._flat.get((name, dtype))
        if flat is None or len(flat) < size:
            flat = self._flat[(name, dtype)] = np.empty(size, dtype=dtype)
        return flat[:size].reshape(shape)

    def take(self, name: str, source: np.ndarray, index: np.ndarray) -> np.ndarray:
        """`source[:, index]` into the array `name` (indices known to be in range)."""
        out = self(name, (len(source), len(index)), source.dtype)
        return np.take(source, index, axis=1, out=out, mode="wrap")

    def cumulate(self, name: str, values: np.ndarray) -> np.ndarray:
        """(k × (m + 1)): 0, then the running sums of each row of `values`."""
        out = self(name, (len(values), values.shape[1] + 1), values.dtype)
        out[:, 0] = 0
        np.cumsum(values, axis=1, out=out[:, 1:])
        return out


class RankedRows:
    """`first` and `second` (no NaN) of the same rows, sorted once; `weigh` a block of weightings."""

    def __init__(
        self, first: np.ndarray, second: np.ndarray, column: np.ndarray | None = None, columns: int | None = None
    ) -> None:
        """`column`: each row's column (cluster) of the weightings; `columns`: how many there are
        (default: the largest used + 1; more when these rows are a group of a larger set)."""
        first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
        rank_first = np.unique(first, return_inverse=True)[1].ravel().astype(np.intp)
        rank_second = np.unique(second, return_inverse=True)[1].ravel().astype(np.intp)
        rows = len(rank_first)
        column = np.arange(rows, dtype=np.intp) if column is None else np.asarray(column, dtype=np.intp)
        self.rows, self.columns = rows, int(column.max(initial=-1)) + 1 if columns is None else columns
        self.rows_per_column = np.bincount(column, minlength=self.columns)
        # Pearson's sums are linear in the weights: per column once, then one matrix product.
        a, b = (first - first.mean(), second - second.mean()) if rows else (first, second)
        self.column_moments = np.stack(
            [np.bincount(column, weights=v, minlength=self.columns) for v in (a, b, a * a, b * b, a * b)], axis=1
        )
        # y: the variable with fewer distinct values; x: the other.
        levels_first, levels_second = int(rank_first.max(initial=-1)) + 1, int(rank_second.max(initial=-1)) + 1
        self.y_is_first = levels_first <= levels_second
        y, x = (rank_first, rank_second) if self.y_is_first else (rank_second, rank_first)
        levels_y, levels_x = (levels_first, levels_second) if self.y_is_first else (levels_second, levels_first)

        order = np.lexsort((y, x))  # by x, ties by y
        position = np.empty(rows, dtype=np.intp)
        position[order] = np.arange(rows)
        self.column_sorted = column[order]
        x_sorted, self.y_sorted = x[order], y[order]
        self.x_bounds = np.searchsorted(x_sorted, np.arange(levels_x + 1))
        cell = x_sorted * max(levels_y, 1) + self.y_sorted
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]]) if rows else np.zeros(0, np.intp)
        ends = np.r_[starts[1:], rows].astype(np.intp)
        shared = ends - starts > 1  # only (x, y) cells of two rows or more hold pairs tied in both
        self.cell_starts, self.cell_ends = starts[shared], ends[shared]
        in_shared = np.repeat(shared, ends - starts)
        self.shared_rows_per_column = np.bincount(self.column_sorted[in_shared], minlength=self.columns)

        self.y_matrix: np.ndarray | None = None  # (columns × y values) row counts, when small
        if levels_y * self.columns <= MATRIX_CELLS_PER_ROW * max(rows, 1):
            self.y_matrix = np.zeros((self.columns, levels_y))
            np.add.at(self.y_matrix, (column, y), 1.0)
        else:
            y_order = np.argsort(y, kind="stable")
            self.y_column_sorted = column[y_order]
            self.y_bounds = np.searchsorted(y[y_order], np.arange(levels_y + 1))

        self.levels_x, self.x_sorted = levels_x, x_sorted
        self._space = _Workspace()
        self.bits = [_BitLevel(x, y, position, levels_x, bit) for bit in range(max(levels_y - 1, 0).bit_length())]

    def weigh(self, weights: np.ndarray, *, values: bool = False, ranks: bool = False) -> Weighed:
        """Sums of a (k × columns) block of non-negative weightings; `values` and `ranks` add what
        Pearson and Spearman need beyond the pair counts. Not for two threads at once (the
        instance keeps its working arrays)."""
        weights = np.asarray(weights)
        if weights.ndim != 2 or weights.shape[1] != self.columns:
            raise ValueError(f"weights must be (k × {self.columns}), got {weights.shape}")
        if (weights < 0).any():
            raise ValueError("weights must be non-negative")
        integer = weights.dtype.kind in "biu"
        weights = weights.astype(np.int64 if integer else np.float64, copy=False)
        total = weights @ self.rows_per_column
        if integer and len(total) and total.max() >= EXACT_ROWS:
            weights, total = weights.astype(np.float64), total.astype(np.float64)
        k, space = len(weights), self._space
        squared = np.multiply(weights, weights, out=space("squared", weights.shape, weights.dtype))
        squares = squared @ self.rows_per_column

        by_x = space.take("by_x", weights, self.column_sorted)  # the rows' weights in (x, y) order
        cumulated = space.cumulate("cumulated", by_x)
        at_bounds = space.take("at_bounds", cumulated, self.x_bounds)
        sums_x = np.subtract(at_bounds[:, 1:], at_bounds[:, :-1], out=space("sums_x", (k, self.levels_x), by_x.dtype))
        sums_y = self._sums_y(weights)
        cells = np.take(cumulated, self.cell_ends, axis=1) - np.take(cumulated, self.cell_starts, axis=1)
        tied_both = np.einsum("ij,ij->i", cells, cells) - squared @ self.shared_rows_per_column  # twice the pairs
        discordant = np.zeros(k, dtype=weights.dtype)
        for level in self.bits:
            discordant += level.discordant(by_x, space)
        side_x, side_y = self._side(sums_x), self._side(sums_y)
        rank_products = None
        if ranks:
            # 2·(centred mid-rank) of each x value, from the running sums at its bounds (_centred_ranks).
            ranks_x = np.add(at_bounds[:, :-1], at_bounds[:, 1:], out=space("ranks_x", sums_x.shape, sums_x.dtype))
            np.subtract(ranks_x, total[:, None], out=ranks_x)
            ranks_y = _centred_ranks(sums_y, total)
            side_x = replace(side_x, rank_squares=np.einsum("ij,ij,ij->i", sums_x, ranks_x, ranks_x))
            side_y = replace(side_y, rank_squares=np.einsum("ij,ij,ij->i", sums_y, ranks_y, ranks_y))
            row_x = space.take("row_x", ranks_x, self.x_sorted)
            row_y = space.take("row_y", ranks_y, self.y_sorted)
            rank_products = np.einsum("ij,ij,ij->i", by_x, row_x, row_y)
        return Weighed(
            total=total,
            squares=squares,
            first=side_y if self.y_is_first else side_x,
            second=side_x if self.y_is_first else side_y,
            tied_both=tied_both // 2 if weights.dtype.kind == "i" else tied_both / 2,
            discordant=discordant,
            moments=weights.astype(np.float64, copy=False) @ self.column_moments if values else None,
            rank_products=rank_products,
        )

    def _side(self, sums: np.ndarray) -> Side:
        positive = np.greater(sums, 0, out=self._space("positive", sums.shape, np.dtype(bool)))
        return Side(within=np.einsum("ij,ij->i", sums, sums), distinct=positive.sum(axis=1), rank_squares=None)

    def _sums_y(self, weights: np.ndarray) -> np.ndarray:
        if self.y_matrix is not None:
            sums = weights.astype(np.float64, copy=False) @ self.y_matrix
            return np.rint(sums).astype(np.int64) if weights.dtype.kind == "i" else sums
        cumulated = self._space.cumulate("cumulated_y", self._space.take("by_y", weights, self.y_column_sorted))
        return np.diff(np.take(cumulated, self.y_bounds, axis=1), axis=1)


class _BitLevel:
    """The discordant pairs first told apart at one bit of y's rank: rows share the prefix
    p = y >> (bit + 1); the `base` side (the larger of the rows with the bit set or not) is cumulated
    in (p, x) order, and each `probe` row adds its weight times the base weight of its prefix on
    its discordant side (a bit-1 base row discords with a bit-0 probe row of larger x, a bit-0 base
    row with a bit-1 probe row of smaller x: with x reversed, both are "base key < probe key").
    Rows are addressed by their position in RankedRows' (x, y) order."""

    def __init__(self, x: np.ndarray, y: np.ndarray, position: np.ndarray, levels_x: int, bit: int) -> None:
        prefix, set_ = y >> (bit + 1), ((y >> bit) & 1).astype(bool)
        base_is_set = 2 * int(set_.sum()) >= len(y)
        base, probe = (np.flatnonzero(set_), np.flatnonzero(~set_))
        if not base_is_set:
            base, probe = probe, base
        key = prefix * levels_x + (x if base_is_set else levels_x - 1 - x)
        base = base[np.argsort(key[base], kind="stable")]
        probe = probe[np.argsort(key[probe], kind="stable")]
        base_key, probe_key, probe_prefix = key[base], key[probe], prefix[probe]
        self.base, self.probe = position[base], position[probe]
        self.before = np.searchsorted(base_key, probe_key, side="left")  # base rows of a smaller key
        # Probe rows in runs of one prefix; each run takes back the base rows of smaller prefixes.
        self.runs = np.flatnonzero(np.r_[True, probe_prefix[1:] != probe_prefix[:-1]]) if len(probe) else probe
        self.run_base_start = np.searchsorted(base_key, probe_prefix[self.runs] * levels_x, side="left")

    def discordant(self, by_x: np.ndarray, space: _Workspace) -> np.ndarray:
        if not len(self.runs):
            return np.zeros(len(by_x), dtype=by_x.dtype)
        cumulated = space.cumulate("base_cumulated", space.take("base", by_x, self.base))
        probe = space.take("probe", by_x, self.probe)
        before = np.einsum("ij,ij->i", probe, space.take("before", cumulated, self.before))
        run_weight = np.add.reduceat(probe, self.runs, axis=1)
        return before - np.einsum("ij,ij->i", run_weight, np.take(cumulated, self.run_base_start, axis=1))
