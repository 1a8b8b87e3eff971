"""A system's number as scoring keeps it (scoring.services.numbers): the system level of the
meta-evaluation compares people with the board's own numbers (corpus BLEU, not the mean of sentence
BLEU), over the captions compared; the sweep computes numbers of an older definition again, keeping
when they were scored, and replaces cells of a protocol version no longer current."""

from __future__ import annotations

import numpy as np
import pytest

from capbench_eval.metaeval.correlation import pearson
from capbench_eval.metaeval.protocols import Protocol
from catalog.models import Caption, Judgment
from leaderboards.metric_board import metric_board
from leaderboards.models import BoardSnapshot
from leaderboards.snapshots import board_refresh
from scoring.models import NUMBER_DEFINITION, CorrelationResult, Metric, Score, SystemScore
from scoring.services.correlations import BoardNumbers, correlations_refresh_stale, rating_dimension_cells
from scoring.services.numbers import system_numbers_refresh
from scoring.services.planning import dataset_plan
from tests.platform.factories import CaptionFactory, DatasetFactory, ItemFactory, SystemFactory
from tests.platform.scoring.inline import run_jobs

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = [
    "a",
    "dog",
    "cat",
    "man",
    "woman",
    "runs",
    "sits",
    "on",
    "the",
    "grass",
    "in",
    "water",
    "red",
    "ball",
    "two",
    "people",
]


@pytest.fixture
def four_systems():
    """Four captioning models on 24 images, people rating each caption once: a dataset with real
    systems, so with a system level (the generic canonical protocol, version 2)."""
    dataset = DatasetFactory(slug="systems", title="Four systems", dimensions=["overall"])
    systems = [SystemFactory(dataset=dataset, slug=f"s{n}") for n in range(4)]
    draw = np.random.default_rng(7)
    for index in range(24):
        references = [" ".join(draw.choice(WORDS, size=6)) for _ in range(3)]
        item = ItemFactory(dataset=dataset, external_id=f"i{index}", references=references)
        for n, system in enumerate(systems):
            # System n keeps n + 2 words of the first reference and adds noise: longer, closer captions.
            text = " ".join(references[0].split()[: n + 2] + list(draw.choice(WORDS, size=3 - n % 2)))
            caption = CaptionFactory(item=item, system=system, text=text)
            Judgment.objects.create(caption=caption, dimension="overall", value=float(n + index % 2))
    run_jobs(dataset_plan(dataset=dataset, slugs=["bleu_4"]))
    return dataset, systems


def _people_means(systems) -> np.ndarray:
    return np.array(
        [np.mean(list(Judgment.objects.filter(caption__system=s).values_list("value", flat=True))) for s in systems]
    )


def test_the_system_level_compares_people_with_the_boards_corpus_numbers(four_systems):
    dataset, systems = four_systems
    version = Metric.objects.get(slug="bleu_4").current_version
    board = np.array([SystemScore.objects.get(system=s, metric_version=version).value for s in systems])
    sentences = np.array(
        [
            np.mean(
                list(Score.objects.filter(caption__system=s, metric_version=version).values_list("value", flat=True))
            )
            for s in systems
        ]
    )
    assert not np.allclose(board, sentences)  # corpus BLEU is not the mean of sentence BLEU here
    cell = CorrelationResult.objects.get(dataset=dataset, level="system", statistic="pearson")
    assert cell.protocol == "systems/canonical@2"
    assert cell.n == 4
    assert cell.value == pytest.approx(pearson(_people_means(systems), board), rel=1e-9)
    assert cell.value != pytest.approx(pearson(_people_means(systems), sentences), rel=1e-3)
    assert cell.low <= cell.value <= cell.high
    assert cell.detail["metric_number"] == "corpus"


def test_a_held_out_split_compares_both_sides_over_its_captions_only(four_systems):
    """A metric fitted on the dataset is compared on the captions it never saw: people's means and
    the systems' numbers both over those captions (BoardNumbers' `captions`)."""
    dataset, systems = four_systems
    version = Metric.objects.get(slug="bleu_4").current_version
    kept = set(
        Caption.objects.filter(item__dataset=dataset, item__external_id__in=[f"i{n}" for n in range(12)]).values_list(
            "pk", flat=True
        )
    )
    scores = dict(Score.objects.filter(metric_version=version, caption_id__in=kept).values_list("caption_id", "value"))
    rows = list(
        Judgment.objects.filter(caption__item__dataset=dataset)
        .order_by("id")
        .values_list("caption_id", "value", "caption__item_id", "caption__system_id", "caption__system__kind")
    )
    chosen = Protocol("systems", "canonical", "2", ("pearson",), "one row per judgment", "references")
    board = BoardNumbers(dataset, version, kept, 1.0)
    cells = rating_dimension_cells("overall", chosen, rows, scores, board=board)
    system = next(c for c in cells if c.get("level") == "system" and c["statistic"] == "pearson")
    metric = board.metric
    numbers, people = [], []
    for s in systems:
        found = Score.objects.filter(metric_version=version, caption__system=s, caption_id__in=kept)
        numbers.append(metric.aggregate([], list(found.values_list("statistics", flat=True))))
        people.append(
            np.mean(
                list(Judgment.objects.filter(caption__system=s, caption_id__in=kept).values_list("value", flat=True))
            )
        )
    assert system["value"] == pytest.approx(pearson(np.array(people), np.array(numbers)), rel=1e-9)


def test_the_sweep_computes_older_numbers_again_keeping_when_they_were_scored(
    four_systems, django_capture_on_commit_callbacks
):
    dataset, systems = four_systems
    version = Metric.objects.get(slug="bleu_4").current_version
    board_refresh(dataset_id=dataset.pk)
    found = SystemScore.objects.get(system=systems[0], metric_version=version)
    right, scored = found.value, found.computed_at
    SystemScore.objects.filter(pk=found.pk).update(definition=0, value=0.123, low=None, high=None)  # an older release's
    board_refresh(dataset_id=dataset.pk)
    gone = SystemScore.objects.create(
        system=systems[1],
        metric_version=version.metric.versions.create(version="0", config_hash="stale", config={}),
        value=0.5,
    )  # its scores are gone: no number
    SystemScore.objects.filter(pk=gone.pk).update(definition=0)
    with django_capture_on_commit_callbacks(execute=True):  # numbers_changed, after the commit: the board rebuilt
        assert system_numbers_refresh() == {dataset.pk}
    again = SystemScore.objects.get(pk=found.pk)
    assert again.value == pytest.approx(right, rel=1e-12)
    assert again.low < again.value < again.high
    assert again.definition == NUMBER_DEFINITION
    assert again.computed_at == scored
    assert not SystemScore.objects.filter(pk=gone.pk).exists()
    cell = next(
        row
        for row in BoardSnapshot.objects.get(dataset=dataset).payload["rows"]
        if row["system"]["id"] == systems[0].pk
    )
    assert cell["cells"]["bleu_4"]["value"] == pytest.approx(right, rel=1e-12)
    assert system_numbers_refresh() == set()  # nothing older left


def test_cells_of_a_protocol_version_no_longer_current_are_replaced(four_systems):
    dataset, _ = four_systems
    version = Metric.objects.get(slug="bleu_4").current_version
    current = CorrelationResult.objects.get(dataset=dataset, level="system", statistic="pearson")
    CorrelationResult.objects.create(
        metric_version=version,
        dataset=dataset,
        dimension="overall",
        statistic="pearson",
        level="system",
        protocol="systems/canonical@1",
        value=-0.9,
        low=-1,
        high=-0.5,
        n=4,
    )  # fmt: skip  (what the previous release stored)
    headers, _ = metric_board(protocol_name="canonical", level="system")
    assert {h.protocol for h in headers if h.dataset == dataset} == {"systems/canonical@2"}  # never beside it
    assert correlations_refresh_stale() == {dataset.pk}
    assert not CorrelationResult.objects.filter(dataset=dataset, protocol="systems/canonical@1").exists()
    assert CorrelationResult.objects.get(pk=current.pk).value == pytest.approx(current.value)
    assert correlations_refresh_stale() == set()
