"""Protocols: every dataset has both, headline statistics match the papers, cells come with intervals
and draws that are the statistic of each replicate (the same replicates as before)."""

import numpy as np
import pytest
from scipy import stats

from capbench_eval.metaeval import bootstrap
from capbench_eval.metaeval.bootstrap import cluster_weights
from capbench_eval.metaeval.protocols import (
    PROTOCOLS,
    RATING_STATISTICS,
    Protocol,
    protocol,
    rating_cells,
    rating_cells_with_draws,
)


def test_every_dataset_has_a_paper_and_a_canonical_protocol():
    datasets = {p.dataset for p in PROTOCOLS.values()}
    assert datasets == {
        *("flickr8k-expert", "flickr8k-cf", "msvd-eval", "thumb", "pascal50s"),
        *("polaris", "nebula", "composite", "foil", "vatex-eval"),
    }
    for dataset in datasets:
        assert protocol(dataset, "paper").version and protocol(dataset, "canonical").version
    assert protocol("flickr8k-expert").statistics[0] == "tau_c"
    assert protocol("flickr8k-cf").statistics[0] == "tau_b"
    assert [protocol(name).statistics[0] for name in ("polaris", "nebula", "composite", "foil")] == [
        *("tau_c", "tau_c", "tau_c"),
        "accuracy",
    ]
    with pytest.raises(KeyError, match="no 'paper' protocol"):
        protocol("nope")


def test_rating_cells_equal_scipy_and_bracket_the_value():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 5, 900).astype(float)
    metric = human + rng.normal(0, 1.5, 900)
    metric[5] = np.nan  # a failed score is left out, not treated as 0
    images = np.repeat(np.arange(300), 3)
    chosen = protocol("flickr8k-expert", "canonical")
    cells = rating_cells(chosen, human, metric, images)
    keep = ~np.isnan(metric)
    assert cells["tau_b"].value == pytest.approx(stats.kendalltau(human[keep], metric[keep]).statistic)
    assert cells["pearson"].value == pytest.approx(stats.pearsonr(human[keep], metric[keep]).statistic)
    for cell in cells.values():
        assert cell.low < cell.value < cell.high
        assert cell.replicates == chosen.replicates


def test_pascal_protocol_has_no_rating_cells():
    with pytest.raises(ValueError, match="no rating statistic"):
        rating_cells(protocol("pascal50s"), [1, 2], [1, 2], [0, 1])


def _golden_rows():
    rng = np.random.default_rng(20)
    human = rng.integers(1, 6, 240).astype(float)
    metric = np.round(human + rng.normal(0, 1.5, 240), 1)
    metric[[3, 50, 77]] = np.nan
    return human, metric, np.repeat(np.arange(60), 4), np.tile(["a", "b", "c", "d"], 60)


GOLDEN = Protocol("golden", "canonical", "1", RATING_STATISTICS, "r", "r", replicates=30, seed=9)


def test_cells_and_draws_are_those_of_the_replicate_at_a_time_code():
    """Values the previous implementation (one Python call per replicate, da53b94) gave for these
    rows and seed: the replicates, and so every stored draw, are unchanged."""
    human, metric, images, _ = _golden_rows()
    cells, draws = rating_cells_with_draws(GOLDEN, human, metric, images)
    before = {
        "tau_b": (0.5195402902699423, 0.47031766588996865, 0.5748390888482008),
        "tau_c": (0.5729138848831207, 0.5141752784650624, 0.6332552163279196),
        "pearson": (0.6649136346032911, 0.613037072812361, 0.7225196863404023),
        "spearman": (0.6603552333135638, 0.5963408236914363, 0.7293272163524156),
    }
    first_draws = {
        "tau_b": (0.5283796249489147, 0.5495718607583938, 0.5296495398739481, 0.5673318374662917),
        "tau_c": (0.5825277288183874, 0.606384304509605, 0.5817475184257979, 0.6242767362780182),
        "pearson": (0.6807051798249678, 0.6953999104570847, 0.6757889641819994, 0.7118072291321229),
        "spearman": (0.6734874987643351, 0.7035714382900932, 0.6701451555309385, 0.7209589793166167),
    }
    for name, (value, low, high) in before.items():
        cell = cells[name]
        assert (cell.value, cell.low, cell.high) == pytest.approx((value, low, high), rel=1e-12, abs=0)
        assert cell.replicates == 30
        assert draws[name].shape == (30,)
        assert draws[name][:4] == pytest.approx(first_draws[name], rel=1e-12, abs=0)


def test_draws_equal_a_statistic_per_replicate_on_copied_rows(monkeypatch):
    """Each draw is the statistic on the rows copied as often as cluster_weights drew their image;
    the block size does not matter."""
    rng = np.random.default_rng(4)
    human = rng.integers(1, 4, 150).astype(float)
    metric = np.round(human + rng.normal(0, 1, 150), 0)  # many ties on both sides
    metric[[0, 9]] = np.nan
    images = np.repeat(np.arange(30), 5)
    chosen = Protocol("copies", "canonical", "1", RATING_STATISTICS, "r", "r", replicates=25, seed=3)
    cells, draws = rating_cells_with_draws(chosen, human, metric, images)
    keep = ~np.isnan(metric)
    weights, _ = cluster_weights(images[keep], 25, 3)
    for r, row in enumerate(weights):
        copies = np.repeat(np.arange(keep.sum()), row)
        h, m = human[keep][copies], metric[keep][copies]
        assert draws["tau_b"][r] == pytest.approx(stats.kendalltau(h, m).statistic, abs=1e-12)
        assert draws["tau_c"][r] == pytest.approx(stats.kendalltau(h, m, variant="c").statistic, abs=1e-12)
        assert draws["pearson"][r] == pytest.approx(stats.pearsonr(h, m).statistic, abs=1e-12)
        assert draws["spearman"][r] == pytest.approx(stats.spearmanr(h, m).statistic, abs=1e-12)
    monkeypatch.setattr(bootstrap, "BLOCK_CELLS", 1)  # one replicate per block
    one_at_a_time = rating_cells_with_draws(chosen, human, metric, images)
    for name in ("tau_b", "tau_c", "spearman"):  # integer sums: exact whatever the block
        assert one_at_a_time[0][name] == cells[name]
        assert np.array_equal(one_at_a_time[1][name], draws[name])
    # Pearson's matrix product may add in another order for another block shape.
    assert one_at_a_time[1]["pearson"] == pytest.approx(draws["pearson"], rel=1e-13, abs=0)


def test_only_the_protocol_statistics_in_its_order():
    human, metric, images, _ = _golden_rows()
    paper = Protocol("golden", "paper", "1", ("tau_c", "tau_b"), "r", "r", replicates=30, seed=9)
    cells, draws = rating_cells_with_draws(paper, human, metric, images)
    canonical_cells, canonical_draws = rating_cells_with_draws(GOLDEN, human, metric, images)
    assert list(cells) == ["tau_c", "tau_b"]
    assert list(draws) == ["tau_c", "tau_b"]
    assert cells["tau_c"] == canonical_cells["tau_c"]
    assert np.array_equal(draws["tau_b"], canonical_draws["tau_b"])


def test_a_per_annotator_protocol_averages_each_annotators_correlation_as_emscore_does():
    rng = np.random.default_rng(11)
    videos, annotators = 120, 3
    metric_per_video = rng.normal(0.5, 0.2, videos)
    metric = np.tile(metric_per_video + 1e-6 * rng.random(videos), annotators)  # noise below the 4th decimal
    human = np.concatenate(
        [np.clip(np.round(3 + 4 * metric_per_video + rng.normal(0, 1, videos)), 1, 5) for _ in range(3)]
    )
    who = np.repeat([f"annotator_{i}" for i in range(annotators)], videos)
    items = np.tile(np.arange(videos), annotators)
    chosen = protocol("vatex-eval", "paper")
    cells = rating_cells(chosen, human, metric, items, who)
    rounded = np.round(metric, 4)
    expected_tau = np.mean([stats.kendalltau(rounded[who == a], human[who == a]).statistic for a in np.unique(who)])
    expected_rho = np.mean([stats.spearmanr(rounded[who == a], human[who == a]).statistic for a in np.unique(who)])
    assert cells["tau_b"].value == pytest.approx(expected_tau, abs=1e-12)
    assert cells["spearman"].value == pytest.approx(expected_rho, abs=1e-12)
    flat = stats.kendalltau(metric, human).statistic  # one correlation over every row: another number
    assert abs(flat - expected_tau) > 1e-4
    assert cells["tau_b"].low < cells["tau_b"].value < cells["tau_b"].high
    with pytest.raises(ValueError, match="annotators are needed"):
        rating_cells(chosen, human, metric, items)


def test_every_protocol_states_its_corpus_rule_and_its_source():
    from capbench_eval.metaeval.protocols import CORPORA, CORPUS_ROWS, CORPUS_SYSTEM, Corpus

    for chosen in PROTOCOLS.values():
        assert chosen.corpus.rule in CORPORA and chosen.corpus.source
    assert protocol("flickr8k-expert").corpus.rule == CORPUS_ROWS  # 16,992 rows, the published tables' corpus
    assert protocol("thumb").corpus.rule == CORPUS_SYSTEM  # each system's results file, as COCO's toolkit
    assert protocol("thumb").without == ("human",)
    with pytest.raises(ValueError, match="not one of"):
        Corpus("per image", "nowhere")
