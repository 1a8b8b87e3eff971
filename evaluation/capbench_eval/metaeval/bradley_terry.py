"""Bradley–Terry ratings from pairwise human preferences (the caption arena), with 95% intervals by
the cluster bootstrap over items (docs/metaeval.md, "Live human evaluation").

The model (Bradley & Terry 1952): system i beats system j with probability

    P(i ≻ j) = exp(θ_i) / (exp(θ_i) + exp(θ_j)) = σ(θ_i − θ_j),   σ(x) = 1 / (1 + exp(−x)).

Ties count as half a win for each side. With W[i, j] the (possibly bootstrap-weighted) number of
wins of i over j, a tie between i and j adding ½ to W[i, j] and ½ to W[j, i], the estimate minimises
the convex penalised negative log-likelihood

    L(θ) = −Σ_{i≠j} W[i, j] · log σ(θ_i − θ_j) + alpha · Σ_i θ_i²

(the same objective, with the same meaning of `alpha`, as `choix.opt_pairwise`). The half-win rule
is the MLE of a quasi-likelihood in which a tie contributes σ(θ_i − θ_j)^½ · σ(θ_j − θ_i)^½; it has
no tie parameter (unlike Rao–Kupper 1967 or Davidson 1970) and is what Chatbot Arena's rating code
does (it counts a decisive vote as two wins and a tie as one win for each side: the same up to a
factor of two).

The penalty is a Gaussian prior θ ~ N(0, 1/(2·alpha)) (MAP estimate). Without it the estimate is
infinite for a system that never loses (or never wins) and undetermined between parts of the
comparison graph that were never compared with each other; with it every θ is finite, a system with
no comparisons gets θ = 0, and the minimiser has Σθ = 0 exactly (the likelihood depends only on
differences, so its gradient sums to zero and the stationarity condition gives 2·alpha·Σθ = 0).
DEFAULT_ALPHA = 0.01 is a prior standard deviation of about 7 on θ: against the likelihood's
curvature of about N/4 for a system with N comparisons it pulls θ toward 0 by a relative 8·alpha/N
(0.4% at N = 20), far less than the interval's width, yet a system that won all of 100 comparisons
against otherwise evenly matched systems ends at θ ≈ 6.1 (strength ≈ 99.8) instead of infinity.
`alpha = 0` gives the plain MLE, which exists
only when every connected part of the comparison graph is strongly connected through wins (Zermelo
1929; Hunter 2004); it is then normalised to mean θ = 0 and a ValueError says when it does not exist.

The displayed score is `strength = 100 · σ(θ)`: the probability (×100) that the system beats a
hypothetical average system (θ = 0). Solved by Newton's method with a backtracking line search on
the convex objective (the Hessian is a weighted graph Laplacian plus 2·alpha·I), batched over
bootstrap replicates, each warm-started from the point estimate.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from capbench_eval.metaeval.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, Interval, cluster_weights

DEFAULT_ALPHA = 0.01
OUTCOMES = ("left", "right", "tie")
_MAX_NEWTON = 100
_MAX_HALVINGS = 60
_DECREMENT_TOL = 1e-20  # Newton decrement gᵀH⁻¹g: stop once the step changes L by less than this
_STEP_TOL = 1e-12  # … or moves no θ by more than this
_SEARCH_TOL = 1e-10  # line search only while the decrement exceeds this × (1 + |L|)
_CHUNK_CELLS = 4_000_000  # replicates × max(systems², items) held at once during the bootstrap


class Comparison(NamedTuple):
    """One human judgement: `left` against `right` on item `cluster` (the image)."""

    left: Hashable
    right: Hashable
    outcome: str  # "left", "right" or "tie"
    cluster: Hashable


@dataclass(frozen=True)
class SystemRating:
    system: Hashable
    theta: float  # Bradley–Terry log-strength, mean 0 over the systems
    strength: float  # 100 · σ(θ): chance (×100) of beating an average system
    interval: Interval  # 95% cluster-bootstrap interval of `strength` (value == strength)
    rank: int  # 1 = best; equal strengths share a rank (1, 2, 2, 4)
    comparisons: int
    wins: int
    losses: int
    ties: int


@dataclass(frozen=True)
class BradleyTerryResult:
    ratings: list[SystemRating]  # in the order of `systems`
    alpha: float
    comparisons: int
    items: int  # distinct clusters (the units resampled by the bootstrap)
    replicates: int  # requested; each interval says how many gave a finite estimate
    seed: int

    def by_system(self) -> dict[Hashable, SystemRating]:
        return {rating.system: rating for rating in self.ratings}


def strength(theta: float) -> float:
    """100 · σ(θ): the probability (×100) of beating a system with θ = 0."""
    return float(100.0 * expit(theta))


def win_matrix(
    left: np.ndarray, right: np.ndarray, outcome: np.ndarray, systems: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """(systems × systems) W[i, j] = weighted wins of i over j, a tie half a win each.
    `left`, `right`: system indices; `outcome`: 0 left won, 1 right won, 2 tie."""
    left_credit = np.array([1.0, 0.0, 0.5])[outcome]
    weight = np.ones(len(left)) if weights is None else np.asarray(weights, dtype=float)
    wins = np.zeros(systems * systems)
    np.add.at(wins, left * systems + right, weight * left_credit)
    np.add.at(wins, right * systems + left, weight * (1.0 - left_credit))
    return wins.reshape(systems, systems)


def mle_exists(wins: np.ndarray) -> bool:
    """Whether the unpenalised (alpha = 0) MLE is finite and unique up to each part's shift: every
    connected part of the comparison graph must be strongly connected through wins (Hunter 2004,
    Assumption 1, applied to each part)."""
    graph = sparse.csr_matrix(wins > 0)
    weak = connected_components(graph, directed=True, connection="weak", return_labels=False)
    strong = connected_components(graph, directed=True, connection="strong", return_labels=False)
    return bool(weak == strong)


def fit_theta(wins: np.ndarray, alpha: float = DEFAULT_ALPHA, start: np.ndarray | None = None) -> np.ndarray:
    """θ minimising the penalised objective (module docstring) for one (n × n) win matrix, or for a
    stack (r × n × n) of them at once; mean θ = 0 over the systems."""
    if alpha < 0:
        raise ValueError("alpha must be ≥ 0")
    wins = np.asarray(wins, dtype=float)
    single = wins.ndim == 2
    stack = wins[None] if single else wins
    theta0 = np.zeros(stack.shape[:2]) if start is None else np.broadcast_to(start, stack.shape[:2])
    theta = _newton(stack, alpha, np.array(theta0, dtype=float))
    theta -= theta.mean(axis=1, keepdims=True)
    return theta[0] if single else theta


def _objective(theta: np.ndarray, wins: np.ndarray, alpha: float) -> np.ndarray:
    diff = theta[:, :, None] - theta[:, None, :]
    # −log σ(x) = log(1 + exp(−x))
    return (wins * np.logaddexp(0.0, -diff)).sum(axis=(1, 2)) + alpha * (theta**2).sum(axis=1)


def _newton(wins: np.ndarray, alpha: float, theta: np.ndarray) -> np.ndarray:
    """Damped Newton on a stack of independent problems; a problem leaves the active set once its
    Newton decrement is negligible. Raises if one does not converge (only possible for alpha = 0
    without a finite MLE, which callers rule out first)."""
    count, n, _ = wins.shape
    games = wins + wins.transpose(0, 2, 1)
    won = wins.sum(axis=2)
    eye = np.eye(n)
    value = _objective(theta, wins, alpha)
    active = np.arange(count)
    for _ in range(_MAX_NEWTON):
        if not active.size:
            return theta
        th, g_games, g_wins = theta[active], games[active], wins[active]
        p = expit(th[:, :, None] - th[:, None, :])  # P(i beats j)
        grad = (g_games * p).sum(axis=2) - won[active] + 2 * alpha * th
        curvature = g_games * p * (1 - p)
        hess = eye * (curvature.sum(axis=2) + 2 * alpha)[:, :, None] - curvature
        if alpha > 0:
            step = -np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        else:  # the Laplacian is singular along each part's shift: the minimum-norm step keeps the means
            step = -(np.linalg.pinv(hess, hermitian=True) @ grad[:, :, None])[:, :, 0]
        decrement = -(grad * step).sum(axis=1)
        # Backtracking (Armijo) line search where the full step does not decrease L enough; close to
        # the minimum (decrement below what L's rounding can resolve) the full step is taken.
        searching = decrement > _SEARCH_TOL * (1.0 + np.abs(value[active]))
        t = np.ones(len(active))
        candidate = th + step
        new_value = _objective(candidate, g_wins, alpha)
        for _ in range(_MAX_HALVINGS):
            short = (new_value > value[active] - 0.25 * t * decrement) & searching
            if not short.any():
                break
            t[short] *= 0.5
            candidate[short] = th[short] + t[short, None] * step[short]
            new_value[short] = _objective(candidate[short], g_wins[short], alpha)
        theta[active] = candidate
        value[active] = new_value
        moved = np.abs(t[:, None] * step).max(axis=1, initial=0.0)
        active = active[(decrement > _DECREMENT_TOL) & (moved > _STEP_TOL)]
    if active.size:
        raise ArithmeticError("Bradley–Terry fit did not converge")
    return theta


def _parse(
    comparisons: Iterable[Sequence[Hashable]], systems: Sequence[Hashable]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    index = {system: position for position, system in enumerate(systems)}
    if len(index) != len(systems):
        raise ValueError("systems must be distinct")
    left: list[int] = []
    right: list[int] = []
    outcome: list[int] = []
    clusters: list[Hashable] = []
    for comparison in comparisons:
        a, b, result, cluster = comparison
        if a not in index or b not in index:
            raise ValueError(f"comparison of a system not in `systems`: {a!r} vs {b!r}")
        if a == b:
            raise ValueError(f"a system compared with itself: {a!r}")
        if result not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, not {result!r}")
        left.append(index[a])
        right.append(index[b])
        outcome.append(OUTCOMES.index(str(result)))
        clusters.append(cluster)
    as_int = np.intp
    return np.array(left, as_int), np.array(right, as_int), np.array(outcome, as_int), _cluster_codes(clusters)


def _cluster_codes(clusters: list[Hashable]) -> np.ndarray:
    """Item indices 0, 1, … in np.unique's order (as cluster_weights numbers clusters) where the keys
    allow it; otherwise (tuples, keys that cannot be compared) in first-seen order."""
    if not clusters:
        return np.zeros(0, dtype=np.intp)
    try:
        keys = np.asarray(clusters)
        if keys.ndim == 1:
            return np.unique(keys, return_inverse=True)[1].ravel().astype(np.intp)
    except (TypeError, ValueError):
        pass
    seen: dict[Hashable, int] = {}
    return np.array([seen.setdefault(cluster, len(seen)) for cluster in clusters], dtype=np.intp)


def _ranks(theta: np.ndarray) -> list[int]:
    """Competition ranks, best first; θs equal to 9 decimals share a rank."""
    rounded = np.round(theta, 9)
    return [int((rounded > value).sum()) + 1 for value in rounded]


def _replicate_thetas(
    left: np.ndarray,
    right: np.ndarray,
    outcome: np.ndarray,
    cluster: np.ndarray,
    systems: int,
    alpha: float,
    theta: np.ndarray,
    replicates: int,
    seed: int,
) -> np.ndarray:
    """(replicates × systems) θ refitted on cluster-bootstrap replicates; NaN rows where the
    unpenalised MLE of a replicate does not exist."""
    clusters = int(cluster.max()) + 1
    # Drawing from range(clusters) gives the same draws as cluster_weights on the comparisons' own
    # clusters (_cluster_codes numbers them in np.unique's order), as a (replicates × clusters) matrix.
    draws, _ = cluster_weights(range(clusters), replicates, seed)
    # (clusters × systems²) wins contributed by each cluster; a replicate's W is draws @ this.
    left_credit = np.array([1.0, 0.0, 0.5])[outcome]
    per_cluster = sparse.csr_matrix(
        (
            np.concatenate([left_credit, 1.0 - left_credit]),
            (np.concatenate([cluster, cluster]), np.concatenate([left * systems + right, right * systems + left])),
        ),
        shape=(clusters, systems * systems),
    )
    per_cluster_t = per_cluster.T.tocsr()
    out = np.empty((replicates, systems))
    chunk = max(1, _CHUNK_CELLS // max(systems * systems, clusters))
    for begin in range(0, replicates, chunk):
        block = draws[begin : begin + chunk].astype(float)
        wins = np.asarray(per_cluster_t @ block.T).T.reshape(len(block), systems, systems)
        fine = np.ones(len(block), dtype=bool) if alpha > 0 else np.array([mle_exists(w) for w in wins])
        thetas = np.full((len(block), systems), np.nan)
        if fine.any():
            thetas[fine] = fit_theta(wins[fine], alpha, start=theta)
        out[begin : begin + chunk] = thetas
    return out


def bradley_terry(
    comparisons: Iterable[Sequence[Hashable]],
    systems: Sequence[Hashable],
    *,
    alpha: float = DEFAULT_ALPHA,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> BradleyTerryResult:
    """Bradley–Terry ratings of `systems` from `comparisons`, each `(left, right, outcome, cluster)`
    (see `Comparison`), with percentile intervals of each strength from `replicates` cluster-bootstrap
    replicates: items (clusters) are drawn with replacement, each comparison weighted by how often its
    item was drawn, and θ refitted on the weighted win counts (warm-started from the estimate).
    Replicates without a finite estimate (only possible with alpha = 0) are left out of the interval,
    whose `replicates` says how many remained. Raises ValueError for alpha = 0 when the MLE does not
    exist."""
    if alpha < 0:
        raise ValueError("alpha must be ≥ 0")
    left, right, outcome, cluster = _parse(comparisons, systems)
    n = len(systems)
    wins = win_matrix(left, right, outcome, n)
    if alpha == 0 and not mle_exists(wins):
        raise ValueError("without a penalty (alpha = 0) the MLE does not exist: some system never loses or never wins")
    theta = fit_theta(wins, alpha) if n else np.zeros(0)
    if replicates > 0 and len(left):
        draws = _replicate_thetas(left, right, outcome, cluster, n, alpha, theta, replicates, seed)
    elif replicates > 0:  # no comparisons: every replicate is the empty data set, θ = 0
        draws = np.zeros((replicates, n))
    else:
        draws = np.zeros((0, n))
    tail = (1 - level) / 2 * 100
    ranks = _ranks(theta)
    ratings = []
    for position, system in enumerate(systems):
        column = draws[:, position]
        column = 100.0 * expit(column[~np.isnan(column)])
        low, high = np.percentile(column, [tail, 100 - tail]) if len(column) else (math.nan, math.nan)
        mine_left, mine_right = left == position, right == position
        won = int((mine_left & (outcome == 0)).sum() + (mine_right & (outcome == 1)).sum())
        tied = int(((mine_left | mine_right) & (outcome == 2)).sum())
        played = int((mine_left | mine_right).sum())
        value = strength(float(theta[position]))
        ratings.append(
            SystemRating(
                system=system,
                theta=float(theta[position]),
                strength=value,
                interval=Interval(value=value, low=float(low), high=float(high), replicates=len(column), level=level),
                rank=ranks[position],
                comparisons=played,
                wins=won,
                losses=played - won - tied,
                ties=tied,
            )
        )
    return BradleyTerryResult(
        ratings=ratings,
        alpha=float(alpha),
        comparisons=len(left),
        items=int(cluster.max()) + 1 if len(cluster) else 0,
        replicates=replicates,
        seed=seed,
    )
