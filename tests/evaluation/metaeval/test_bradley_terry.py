"""Bradley–Terry ratings of the caption arena: hand-computed cases, choix and a direct scipy MLE as
oracles, the half-win rule for ties, the penalty keeping θ finite, and the item bootstrap."""

import math

import choix
import numpy as np
import pytest
from scipy.optimize import minimize

from capbench_eval.metaeval.bootstrap import Interval, cluster_weights
from capbench_eval.metaeval.bradley_terry import (
    BradleyTerryResult,
    Comparison,
    bradley_terry,
    fit_theta,
    strength,
    win_matrix,
)


def random_comparisons(seed: int, systems: int = 6, count: int = 400, ties: float = 0.15, items: int = 80) -> list:
    """Comparisons drawn from a Bradley–Terry model with random strengths, a share of them ties."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(0, 1, systems)
    left = rng.integers(0, systems, count)
    right = (left + rng.integers(1, systems, count)) % systems
    p_left = 1 / (1 + np.exp(-(truth[left] - truth[right])))
    draw = rng.random(count)
    outcome = np.where(draw < ties, "tie", np.where(rng.random(count) < p_left, "left", "right"))
    item = rng.integers(0, items, count)
    return [
        Comparison(f"s{a}", f"s{b}", str(o), f"img{i}") for a, b, o, i in zip(left, right, outcome, item, strict=True)
    ]


def scipy_mle(comparisons: list, systems: list, alpha: float, weights=None) -> np.ndarray:
    """The objective written out comparison by comparison (ties half a win each), minimised by BFGS."""
    index = {s: i for i, s in enumerate(systems)}
    weights = np.ones(len(comparisons)) if weights is None else weights
    rows = [
        (index[c.left], index[c.right], {"left": 1.0, "right": 0.0, "tie": 0.5}[c.outcome], w)
        for c, w in zip(comparisons, weights, strict=True)
    ]

    def objective(theta):
        value = alpha * np.sum(theta**2)
        for a, b, credit, w in rows:
            d = theta[a] - theta[b]
            value += w * (credit * np.logaddexp(0, -d) + (1 - credit) * np.logaddexp(0, d))
        return value

    found = minimize(objective, np.zeros(len(systems)), method="BFGS", options={"gtol": 1e-10}).x
    return found - found.mean()


def test_three_wins_to_one_give_a_log_odds_of_three():
    comparisons = [("A", "B", "left", 1), ("A", "B", "left", 2), ("B", "A", "right", 3), ("B", "A", "left", 4)]
    result = bradley_terry(comparisons, ["A", "B"], alpha=0, replicates=0)
    a, b = result.ratings
    assert a.theta - b.theta == pytest.approx(math.log(3), abs=1e-9)
    assert a.theta == pytest.approx(-b.theta, abs=1e-12)  # mean 0
    assert a.strength == pytest.approx(100 / (1 + 3**-0.5), abs=1e-7)  # σ(ln 3 / 2)
    assert (a.wins, a.losses, a.ties, a.comparisons) == (3, 1, 0, 4)
    assert (b.wins, b.losses, b.ties, b.comparisons) == (1, 3, 0, 4)
    assert (a.rank, b.rank) == (1, 2)


def test_a_tie_is_half_a_win_for_each_side():
    """3 wins, 1 loss and 1 tie: W[A, B] = 3.5, W[B, A] = 1.5, so θA − θB = ln(3.5 / 1.5)."""
    comparisons = [("A", "B", "left", 1)] * 3 + [("A", "B", "right", 2), ("B", "A", "tie", 3)]
    result = bradley_terry(comparisons, ["A", "B"], alpha=0, replicates=0)
    a, b = result.ratings
    assert a.theta - b.theta == pytest.approx(math.log(7 / 3), abs=1e-9)
    assert (a.wins, a.losses, a.ties) == (3, 1, 1)
    assert (b.wins, b.losses, b.ties) == (1, 3, 1)
    # A tie on its own between two systems leaves them level.
    level = bradley_terry([("A", "B", "tie", 1)], ["A", "B"], alpha=0, replicates=0)
    assert [r.theta for r in level.ratings] == pytest.approx([0, 0], abs=1e-12)


def test_the_penalised_estimate_matches_choix():
    """choix.opt_pairwise minimises the same objective, alpha·Σθ² included (no ties: choix has none)."""
    comparisons = [c for c in random_comparisons(1, ties=0) if c.outcome != "tie"]
    systems = [f"s{i}" for i in range(6)]
    data = [
        (int(c.left[1:]), int(c.right[1:])) if c.outcome == "left" else (int(c.right[1:]), int(c.left[1:]))
        for c in comparisons
    ]
    for alpha in (0.01, 0.5):
        ours = np.array([r.theta for r in bradley_terry(comparisons, systems, alpha=alpha, replicates=0).ratings])
        theirs = choix.opt_pairwise(6, data, alpha=alpha, method="Newton-CG", tol=1e-10)
        assert ours == pytest.approx(theirs - theirs.mean(), abs=1e-6)
        assert theirs.mean() == pytest.approx(0, abs=1e-6)  # the penalty alone centres the estimate


def test_the_unpenalised_estimate_matches_choix_ilsr():
    """alpha = 0 on a connected data set where every system wins and loses: the plain MLE, which
    choix's iterative Luce spectral ranking also reaches."""
    comparisons = [c for c in random_comparisons(2, ties=0) if c.outcome != "tie"]
    systems = [f"s{i}" for i in range(6)]
    data = [
        (int(c.left[1:]), int(c.right[1:])) if c.outcome == "left" else (int(c.right[1:]), int(c.left[1:]))
        for c in comparisons
    ]
    ours = np.array([r.theta for r in bradley_terry(comparisons, systems, alpha=0, replicates=0).ratings])
    theirs = choix.ilsr_pairwise(6, data, alpha=0.0, tol=1e-12, max_iter=1000)
    assert ours == pytest.approx(theirs - theirs.mean(), abs=1e-6)


@pytest.mark.parametrize("alpha", [0.0, 0.01, 1.0])
def test_matches_a_direct_scipy_mle_with_ties_and_weights(alpha):
    comparisons = random_comparisons(3)
    systems = [f"s{i}" for i in range(6)]
    ours = np.array([r.theta for r in bradley_terry(comparisons, systems, alpha=alpha, replicates=0).ratings])
    assert ours == pytest.approx(scipy_mle(comparisons, systems, alpha), abs=1e-5)
    # Weighted counts, as in a bootstrap replicate.
    weights = np.random.default_rng(4).integers(0, 3, len(comparisons)).astype(float)
    index = {s: i for i, s in enumerate(systems)}
    wins = win_matrix(
        np.array([index[c.left] for c in comparisons]),
        np.array([index[c.right] for c in comparisons]),
        np.array([("left", "right", "tie").index(c.outcome) for c in comparisons]),
        6,
        weights,
    )
    assert fit_theta(wins, alpha) == pytest.approx(scipy_mle(comparisons, systems, alpha, weights), abs=1e-5)


def test_a_system_that_never_loses_stays_finite():
    comparisons = [("champ", "B", "left", i) for i in range(30)] + [("C", "champ", "right", i) for i in range(30, 40)]
    comparisons += [("B", "C", "left", 40), ("C", "B", "left", 41)]
    result = bradley_terry(comparisons, ["champ", "B", "C"], replicates=100)
    champ = result.by_system()["champ"]
    assert math.isfinite(champ.theta)
    assert 3 < champ.theta < 15
    assert champ.rank == 1
    assert (champ.wins, champ.losses, champ.ties) == (40, 0, 0)
    assert 90 < champ.strength < 100
    assert champ.interval.high <= 100
    assert all(math.isfinite(r.interval.low) and math.isfinite(r.interval.high) for r in result.ratings)
    with pytest.raises(ValueError, match="does not exist"):
        bradley_terry(comparisons, ["champ", "B", "C"], alpha=0)


def test_a_system_without_comparisons_scores_fifty():
    comparisons = random_comparisons(5, systems=4)
    result = bradley_terry(comparisons, ["s0", "s1", "s2", "s3", "newcomer"], replicates=200)
    newcomer = result.by_system()["newcomer"]
    assert newcomer.theta == pytest.approx(0, abs=1e-9)
    assert newcomer.strength == pytest.approx(50, abs=1e-7)
    assert newcomer.interval.low == pytest.approx(50, abs=1e-6)
    assert newcomer.interval.high == pytest.approx(50, abs=1e-6)
    assert (newcomer.comparisons, newcomer.wins, newcomer.losses, newcomer.ties) == (0, 0, 0, 0)
    assert sum(r.theta for r in result.ratings) == pytest.approx(0, abs=1e-9)
    empty = bradley_terry([], ["a", "b"], replicates=10)
    assert [(r.strength, r.interval.low, r.interval.high, r.rank) for r in empty.ratings] == [(50, 50, 50, 1)] * 2
    assert empty.items == 0
    assert empty.comparisons == 0


def test_a_disconnected_graph_is_fitted_with_the_penalty():
    comparisons = [("A", "B", "left", 1), ("A", "B", "left", 2), ("A", "B", "right", 3)]
    comparisons += [("C", "D", "left", 4), ("C", "D", "right", 5), ("D", "C", "left", 6)]
    result = bradley_terry(comparisons, ["A", "B", "C", "D"], replicates=50).by_system()
    assert result["A"].theta > 0 > result["B"].theta
    assert result["A"].theta == pytest.approx(-result["B"].theta)
    assert result["D"].theta > 0 > result["C"].theta
    # Unpenalised, each part is fitted on its own: A − B = ln 2 and D − C = ln 2.
    plain = bradley_terry(comparisons, ["A", "B", "C", "D"], alpha=0, replicates=0).by_system()
    assert plain["A"].theta - plain["B"].theta == pytest.approx(math.log(2), abs=1e-9)
    assert plain["D"].theta - plain["C"].theta == pytest.approx(math.log(2), abs=1e-9)


def test_the_interval_brackets_the_estimate_and_is_reproducible():
    comparisons = random_comparisons(6, count=600, items=150)
    systems = [f"s{i}" for i in range(6)]
    first = bradley_terry(comparisons, systems, replicates=300, seed=9)
    again = bradley_terry(comparisons, systems, replicates=300, seed=9)
    other = bradley_terry(comparisons, systems, replicates=300, seed=10)
    assert first == again
    assert first != other
    shuffled = [comparisons[i] for i in np.random.default_rng(0).permutation(len(comparisons))]
    bounds = lambda result: [(r.strength, r.interval.low, r.interval.high) for r in result.ratings]  # noqa: E731
    assert np.array(bounds(bradley_terry(shuffled, systems, replicates=300, seed=9))) == pytest.approx(
        np.array(bounds(first)), abs=1e-9
    )
    for rating in first.ratings:
        assert rating.interval.low < rating.strength < rating.interval.high
        assert rating.interval.value == rating.strength
        assert rating.interval.replicates == 300
        assert 1 < rating.interval.high - rating.interval.low < 30
    assert first.items == len({c.cluster for c in comparisons})
    assert first.comparisons == 600
    assert first.replicates == 300
    assert first.seed == 9


def test_a_replicate_refits_the_comparisons_weighted_by_their_items_draws():
    """The interval is the percentile of strengths refitted with each comparison weighted by how
    often cluster_weights drew its item (the comparisons' own clusters, as cluster_weights sees them)."""
    comparisons = random_comparisons(7, count=200, items=40)
    systems = [f"s{i}" for i in range(6)]
    result = bradley_terry(comparisons, systems, replicates=60, seed=3)
    weights, _ = cluster_weights([c.cluster for c in comparisons], 60, 3)
    index = {s: i for i, s in enumerate(systems)}
    left = np.array([index[c.left] for c in comparisons])
    right = np.array([index[c.right] for c in comparisons])
    outcome = np.array([("left", "right", "tie").index(c.outcome) for c in comparisons])
    thetas = np.array([fit_theta(win_matrix(left, right, outcome, 6, w), 0.01) for w in weights])
    strengths = 100 / (1 + np.exp(-thetas))
    for position, rating in enumerate(result.ratings):
        low, high = np.percentile(strengths[:, position], [2.5, 97.5])
        assert (rating.interval.low, rating.interval.high) == pytest.approx((low, high), abs=1e-7)


def test_ranks_follow_strength_and_share_ties():
    comparisons = [("A", "C", "left", i) for i in range(3)] + [("C", "A", "left", 3)]
    comparisons += [("B", "C", "left", i) for i in range(4, 7)] + [("B", "C", "right", 7)]
    comparisons += [("A", "B", "left", 8), ("A", "B", "right", 9)]
    result = bradley_terry(comparisons, ["C", "A", "B", "D"], replicates=0)
    ranks = {r.system: r.rank for r in result.ratings}
    assert ranks == {"A": 1, "B": 1, "D": 3, "C": 4}
    thetas = {r.system: r.theta for r in result.ratings}
    assert thetas["A"] == pytest.approx(thetas["B"])
    assert thetas["D"] == pytest.approx(0, abs=1e-9)
    assert thetas["A"] > thetas["D"] > thetas["C"]
    assert [r.system for r in result.ratings] == ["C", "A", "B", "D"]  # in the order given


def test_the_result_is_plain_python():
    result = bradley_terry(random_comparisons(8), [f"s{i}" for i in range(6)], replicates=20)
    assert isinstance(result, BradleyTerryResult) and type(result.alpha) is float and type(result.items) is int
    for rating in result.ratings:
        assert type(rating.system) is str
        assert all(type(v) is float for v in (rating.theta, rating.strength, rating.interval.low, rating.interval.high))
        assert all(type(v) is int for v in (rating.rank, rating.comparisons, rating.wins, rating.losses, rating.ties))
        assert isinstance(rating.interval, Interval) and type(rating.interval.replicates) is int
    assert strength(0.0) == 50.0
    assert type(strength(1.0)) is float


def test_unpenalised_replicates_without_an_estimate_are_left_out():
    """alpha = 0: a replicate in which some system never loses has no MLE and is dropped."""
    comparisons = [("A", "B", "left", i) for i in range(3)] + [("B", "A", "left", 3)]
    rating = bradley_terry(comparisons, ["A", "B"], alpha=0, replicates=200, seed=1).ratings[0]
    # B wins only on item 3; a replicate drawing it 0 times (about (3/4)^4 ≈ 32%) has no estimate.
    assert 100 < rating.interval.replicates < 180
    assert rating.interval.low <= rating.strength <= rating.interval.high


@pytest.mark.parametrize(
    ("comparison", "message"),
    [
        (("A", "Z", "left", 1), "not in `systems`"),
        (("A", "A", "left", 1), "itself"),
        (("A", "B", "draw", 1), "outcome"),
    ],
)
def test_bad_comparisons_are_refused(comparison, message):
    with pytest.raises(ValueError, match=message):
        bradley_terry([comparison], ["A", "B"])


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        bradley_terry([], ["A", "A"])
    with pytest.raises(ValueError, match="alpha"):
        bradley_terry([], ["A", "B"], alpha=-1)


def test_items_may_be_any_hashable():
    comparisons = random_comparisons(9, count=120, items=30)
    systems = [f"s{i}" for i in range(6)]
    plain = bradley_terry(comparisons, systems, replicates=50)
    for key in (lambda c: ("img", c.cluster), lambda c: 7 if c.cluster == "img3" else c.cluster):
        keyed = [c._replace(cluster=key(c)) for c in comparisons]
        result = bradley_terry(keyed, systems, replicates=50)
        assert result.items == plain.items
        for a, b in zip(result.ratings, plain.ratings, strict=True):
            assert a.theta == b.theta
            assert a.interval.low < a.strength < a.interval.high
