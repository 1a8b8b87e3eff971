"""Dataset scoring through the engine reproduces the published Flickr8k-Expert Kendall values from
stored per-caption scores, and Pascal-50S gets pairwise accuracies per category."""

from pathlib import Path

import numpy as np
import pytest

from capbench_eval.metaeval.pairwise import pairwise_accuracy
from capbench_eval.metaeval.published import published_of
from catalog.importers.registry import read_bundle
from catalog.models import PairJudgment
from catalog.services.imports import dataset_import
from scoring.models import CorrelationResult, Score
from scoring.services.planning import dataset_plan
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_flickr8k_expert_correlations_match_the_papers(judgment_data):
    dataset = dataset_import(
        bundle=read_bundle("flickr8k-expert", judgment_data / "flickr8k"), source_path="shared"
    ).dataset
    run_jobs(dataset_plan(dataset=dataset, slugs=["bleu_4", "cider_d"]))
    for slug in ("bleu_4", "cider_d"):
        cells = {
            (r.protocol, r.statistic): r
            for r in CorrelationResult.objects.filter(dataset=dataset, metric_version__metric__slug=slug)
        }
        for published in (e for e in published_of("flickr8k-expert") if e.metric == slug):
            cell = cells[("flickr8k-expert/paper@1", published.statistic)]
            assert abs(100 * cell.value - published.value) <= published.tolerance + 1e-9  # ±0.05
            assert cell.n == 16992
            assert cell.left_out == 0
            assert cell.low < cell.value < cell.high
        assert (
            cells[("flickr8k-expert/canonical@1", "tau_b")].value == cells[("flickr8k-expert/paper@1", "tau_b")].value
        )
    # On the whole dataset the board puts the papers' numbers beside ours.
    from leaderboards.metric_board import metric_board

    _, rows = metric_board(protocol_name="paper")
    assert sorted(p for row in rows if row.column.slug == "cider_d" for p in row.published) == [43.6, 43.9]


def test_pascal50s_accuracy_per_category_from_stored_scores(judgment_data):
    dataset = dataset_import(bundle=read_bundle("pascal50s", judgment_data / "pascal50s"), source_path="shared").dataset
    run_jobs(dataset_plan(dataset=dataset, slugs=["rouge_l"]))
    cells = {(r.dimension, r.statistic): r for r in CorrelationResult.objects.filter(dataset=dataset)}
    assert {dimension for dimension, _ in cells} == {"HC", "HI", "HM", "MM", "mean"}
    scores = dict(Score.objects.values_list("caption_id", "value"))
    pairs = PairJudgment.objects.filter(dataset=dataset, category="HI").exclude(winner__in=["", "tie"])
    direct = pairwise_accuracy(
        [scores[p.caption_a_id] for p in pairs], [scores[p.caption_b_id] for p in pairs], [p.winner for p in pairs]
    )
    hi = cells[("HI", "accuracy")]
    assert hi.value == pytest.approx(direct.strict)
    assert hi.n == len(pairs) == 1000
    assert cells[("HI", "accuracy_ties_half")].value == pytest.approx(direct.ties_half)
    assert 0.9 < hi.value < 1.0
    assert hi.low <= hi.value <= hi.high  # HI is the easy category
    mean = cells[("mean", "accuracy")].value
    assert mean == pytest.approx(np.mean([cells[(c, "accuracy")].value for c in ("HC", "HI", "HM", "MM")]))


def test_system_level_cells_where_a_dataset_has_real_systems():
    import tests.platform.scoring.plugins  # noqa: F401  (test_words: the word count)
    from catalog.models import Judgment
    from tests.platform.factories import CaptionFactory, DatasetFactory, ItemFactory, SystemFactory, words

    dataset = DatasetFactory(slug="systems", title="Four systems", dimensions=["overall"])
    systems = [SystemFactory(dataset=dataset, slug=f"s{n}") for n in range(4)]
    for index in range(30):
        item = ItemFactory(dataset=dataset, external_id=f"i{index}", references=["a reference"])
        for n, system in enumerate(systems):
            caption = CaptionFactory(item=item, system=system, text=words(n + 1 + index % 3))
            Judgment.objects.create(caption=caption, dimension="overall", value=n + (index % 2))
    run_jobs(dataset_plan(dataset=dataset, slugs=["test_words"]))
    system_cells = {r.statistic: r for r in CorrelationResult.objects.filter(dataset=dataset, level="system")}
    assert set(system_cells) == {"pearson", "tau_b", "pairwise_agreement"}
    assert system_cells["tau_b"].value == 1.0
    assert system_cells["tau_b"].n == 4
    assert system_cells["pearson"].value == pytest.approx(1.0)
    assert CorrelationResult.objects.filter(dataset=dataset, level="caption", statistic="tau_b").count() == 1


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"


def test_the_added_sets_are_correlated_under_their_papers_protocols():
    """FOIL through its pairs (accuracy, the original should win) and Polaris through its ratings
    (tau-c first), from real scores of the engine on the fixtures."""
    foil = dataset_import(bundle=read_bundle("foil", FIXTURES / "foil"), source_path="test").dataset
    polaris = dataset_import(bundle=read_bundle("polaris", FIXTURES / "polaris"), source_path="test").dataset
    for dataset in (foil, polaris):
        run_jobs(dataset_plan(dataset=dataset, slugs=["cider_d"]))
    foil_cells = {(r.protocol, r.statistic): r for r in CorrelationResult.objects.filter(dataset=foil)}
    assert {"foil/paper@1", "foil/canonical@2"} == {protocol for protocol, _ in foil_cells}
    scores = dict(Score.objects.filter(caption__item__dataset=foil).values_list("caption_id", "value"))
    pairs = PairJudgment.objects.filter(dataset=foil)
    direct = pairwise_accuracy(
        [scores[p.caption_a_id] for p in pairs], [scores[p.caption_b_id] for p in pairs], [p.winner for p in pairs]
    )
    assert foil_cells[("foil/paper@1", "accuracy")].value == pytest.approx(direct.strict)
    assert ("foil/paper@1", "accuracy_ties_half") not in foil_cells  # the paper counts a tie as wrong
    # The canonical protocol's three tie conventions: wrong, half, and for the second caption.
    assert foil_cells[("foil/canonical@2", "accuracy_ties_half")].value == pytest.approx(direct.ties_half)
    assert foil_cells[("foil/canonical@2", "accuracy_ties_second")].value == pytest.approx(direct.ties_second)
    polaris_cells = {(r.protocol, r.statistic) for r in CorrelationResult.objects.filter(dataset=polaris)}
    assert ("polaris/paper@1", "tau_c") in polaris_cells
    assert ("polaris/canonical@1", "pearson") in polaris_cells


@pytest.mark.django_db(transaction=True)
def test_writers_of_the_same_cells_wait_for_each_other_and_never_deadlock(demo_dataset):
    """Two workers finishing jobs of one dataset write the same correlation cells at once (a job's
    finalisation and the sweep's refresh). Each takes the results revision before any result row, so
    one waits for the other; the statement trigger alone took it after the first row, and they
    deadlocked (seen under `make run` with two datasets scoring)."""
    import threading

    from django.db import connection

    from scoring.models import MetricVersion, ResultsRevision
    from scoring.services.correlations import correlations_store
    from scoring.services.metrics import metrics_sync

    metrics_sync()
    version = MetricVersion.objects.filter(metric__slug="bleu_4").first()
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def write(offset: float) -> None:
        try:
            start.wait()
            for round_ in range(15):
                cells = [
                    {
                        "protocol": "demo/canonical@2",
                        "dimension": dimension,
                        "statistic": "tau_b",
                        "value": offset + round_,
                        "n": 3,
                    }
                    for dimension in (
                        ["overall", "precision", "recall"] if offset else ["recall", "precision", "overall"]
                    )
                ]
                correlations_store(dataset=demo_dataset, metric_version=version, cells=cells)
        except BaseException as error:  # noqa: BLE001 (reported to the test's thread)
            failures.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(offset,)) for offset in (0.0, 100.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert CorrelationResult.objects.filter(dataset=demo_dataset, protocol="demo/canonical@2").count() == 3
    assert ResultsRevision.objects.get(pk=1).number >= 30
