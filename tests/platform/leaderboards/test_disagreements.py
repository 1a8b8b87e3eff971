"""Where a metric disagrees with people: discordant pairs counted per image over the dataset's own
rated and scored captions, the most discordant images first, pairwise datasets by the pairs where the
metric prefers the caption people did not; a submission's captions never read; bad query values
answer 200 or 404, a private dataset 404."""

import json

import pytest

from catalog.models import Caption, Dataset, Item, Judgment, PairJudgment
from leaderboards.disagreements import metric_disagreements, page_bounds, pair_counts, pair_verdict, scored_version
from scoring.models import CorrelationResult, EvaluationJob, Metric, MetricVersion, Score
from submissions.services import MethodInfo, submission_create
from tests.platform.factories import CaptionFactory, DatasetFactory, ItemFactory, SystemFactory

pytestmark = pytest.mark.django_db


def _metric(slug: str, name: str, *, higher_is_better: bool = True, registered: bool = True) -> Metric:
    metric = Metric.objects.create(
        slug=slug, name=name, family="ngram", higher_is_better=higher_is_better, is_registered=registered
    )
    metric.current_version = MetricVersion.objects.create(metric=metric, version="1", config_hash=slug[:16])
    metric.save()
    return metric


def _item(dataset, system, external_id, people, metrics, *, annotators=1):
    """An item whose i-th caption people rated people[i] (each annotator the same, unless a tuple)
    and each metric of `metrics` ({Metric: [scores]}) scored."""
    item = ItemFactory(dataset=dataset, external_id=external_id, references=[f"a reference of {external_id}"])
    for i, rating in enumerate(people):
        caption = CaptionFactory(item=item, system=system, external_id=str(i), text=f"{external_id} caption {i}")
        ratings = rating if isinstance(rating, tuple) else (rating,) * annotators
        for number, value in enumerate(ratings):
            Judgment.objects.create(caption=caption, dimension="overall", annotator=f"expert_{number}", value=value)
        for metric, scores in metrics.items():
            Score.objects.create(caption=caption, metric_version=metric.current_version, value=scores[i])
    for metric in metrics:
        _scoring_recorded(dataset, metric)
    return item


def _scoring_recorded(dataset, metric) -> None:
    """The record a dataset's scoring leaves (a job, still open: the version choice below reads done ones)."""
    EvaluationJob.objects.get_or_create(
        purpose="dataset", dataset=dataset, system=None, metric_version=metric.current_version
    )


@pytest.fixture
def rated():
    dataset = DatasetFactory(slug="rated", dimensions=["overall", "fluency"])
    system = SystemFactory(dataset=dataset, slug="retrieved", kind="human")
    bleu, other = _metric("bleu_x", "BLEU-X"), _metric("other_x", "Other-X")
    hidden = _metric("gone_x", "Gone-X", registered=False)
    _item(dataset, system, "four", [4, 3, 2, 1], {bleu: [0.4, 0.1, 0.3, 0.2], other: [1, 2, 3, 4], hidden: [0] * 4})
    # The hand-built item: people 3 > 2 > 1 (means of two annotators), BLEU-X 0.1 < 0.5 > 0.3:
    # (0, 1) and (0, 2) discordant, (1, 2) concordant.
    _item(dataset, system, "hand", [(3, 3), (1, 3), (1, 1)], {bleu: [0.1, 0.5, 0.3], other: [7, 8, 9], hidden: [0] * 3})
    _item(dataset, system, "most", [3, 2, 1], {bleu: [0.1, 0.2, 0.3], other: [0, 0, 0], hidden: [0] * 3})
    _item(dataset, system, "agree", [3, 2, 1], {bleu: [0.3, 0.2, 0.1], other: [0, 0, 0], hidden: [0] * 3})
    _item(dataset, system, "people-tie", [2, 2], {bleu: [0.3, 0.2], other: [0, 0], hidden: [0] * 2})
    _item(dataset, system, "lonely", [4], {bleu: [0.0], other: [0], hidden: [0]})
    return dataset, bleu


def _page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _order(page: str) -> list[str]:
    return [part.split('"')[0] for part in page.split('<article class="explored" id="item-')[1:]]


def test_pair_counts_on_a_hand_built_item():
    counts = pair_counts([3, 2, 1], [0.1, 0.5, 0.3])
    assert (counts.discordant, counts.concordant, counts.metric_tied, counts.people_tied) == (2, 1, 0, 0)
    assert counts.share == pytest.approx(2 / 3)
    lower = pair_counts([3, 2, 1], [0.1, 0.5, 0.3], higher_is_better=False)  # lower is better: read the other way
    assert (lower.discordant, lower.concordant) == (1, 2)
    tied = pair_counts([3, 2, 2, 1 / 3 + 1 / 3 + 1 / 3], [0.5, 0.5, 0.1, 0.9])
    assert (tied.discordant, tied.concordant, tied.metric_tied, tied.people_tied) == (3, 1, 1, 1)
    assert pair_verdict("", 3, 1) == "a"
    assert pair_verdict("", 1, 1) == ""
    assert pair_verdict("tie") == ""
    # Pages: at most 20 images, and past the first one at most 240 caption rows.
    assert page_bounds([]) == [(0, 0)]
    assert page_bounds([3] * 45) == [(0, 20), (20, 40), (40, 45)]
    assert page_bounds([48] * 7) == [(0, 5), (5, 7)]
    assert page_bounds([300, 2, 300]) == [(0, 1), (1, 2), (2, 3)]


def test_items_ranked_by_discordant_pairs_with_every_metrics_reading(fresh_page_memory, client, rated):
    dataset, bleu = rated
    found = metric_disagreements(metric=bleu, viewer=None)
    assert found.dataset == dataset
    assert found.dimension == "overall"
    assert found.version == bleu.current_version
    # Compared: every item with 2+ rated and scored captions (not "lonely"); listed: those with a discordant pair.
    assert (found.compared, found.ranked) == (5, 3)
    shown = {entry.item.external_id: entry.counts for entry in found.items}
    assert [entry.item.external_id for entry in found.items] == ["most", "hand", "four"]  # 3; 2 of 3; 2 of 6
    assert (shown["hand"].discordant, shown["hand"].concordant, shown["hand"].metric_tied) == (2, 1, 0)
    assert (shown["four"].discordant, shown["four"].concordant) == (2, 4)
    assert (found.totals.discordant, found.totals.concordant, found.totals.people_tied) == (7, 8, 1)
    hand = found.items[1]
    assert [c.people for c in hand.candidates] == [3, 2, 1]  # the annotators' mean, people's best first
    assert [c.metric_rank for c in hand.candidates] == [3, 1, 2]
    assert len(hand.candidates[1].judgments) == 2
    assert found.columns == [("other_x", "Other-X")]  # the registered metrics; Gone-X is not
    assert [cell.value for c in hand.candidates for cell in c.cells] == [7, 8, 9]
    only = metric_disagreements(metric=bleu, viewer=None, metrics=Metric.objects.filter(slug="gone_x"))
    assert only.columns == [("gone_x", "Gone-X")]

    page = _page(client, "/metrics/bleu_x/disagreements/")
    assert _order(page) == [str(Item.objects.get(external_id=e).pk) for e in ("most", "hand", "four")]
    assert "hand caption 1" in page
    assert "a reference of hand" in page
    assert ">Other-X</a></th>" in page
    assert "Gone-X" not in page
    assert "lonely caption" not in page
    assert "agree caption" not in page
    assert f'href="/datasets/rated/items/{hand.item.pk}/"' in page
    assert "<caption>" in page
    assert 'scope="col"' in page
    assert 'class="scroll"' in page
    assert "<script" not in page
    CorrelationResult.objects.create(
        metric_version=bleu.current_version, dataset=dataset, dimension="overall", statistic="tau_c", protocol="p", n=9
    )
    assert 'href="/metrics/bleu_x/disagreements/?dataset=rated"' in _page(client, "/metrics/bleu_x/")

    # Lower is better: the same scores read the other way ("four" 4 of 6 discordant, "agree" 3 of 3).
    Metric.objects.filter(pk=bleu.pk).update(higher_is_better=False)
    bleu.refresh_from_db()
    flipped = metric_disagreements(metric=bleu, viewer=None)
    assert [(e.item.external_id, e.counts.discordant) for e in flipped.items] == [
        ("four", 4),
        ("agree", 3),
        ("hand", 1),
    ]


def test_the_version_read_needs_no_finished_job_and_follows_the_metric_page(rated):
    dataset, bleu = rated
    assert scored_version(metric=bleu, dataset=dataset) == bleu.current_version  # no finished EvaluationJob
    newer = MetricVersion.objects.create(metric=bleu, version="2", config_hash="newer")
    assert scored_version(metric=bleu, dataset=dataset) == bleu.current_version  # newer has no score here
    caption = Caption.objects.filter(item__dataset=dataset).first()
    Score.objects.create(caption=caption, metric_version=newer, value=1.0)
    assert scored_version(metric=bleu, dataset=dataset) == newer
    EvaluationJob.objects.filter(dataset=dataset, metric_version=bleu.current_version).update(
        status=EvaluationJob.Status.DONE
    )
    assert scored_version(metric=bleu, dataset=dataset) == bleu.current_version  # what the metric page charts


def test_a_submissions_captions_are_never_read(client, rated, captioner):
    dataset, bleu = rated
    content = json.dumps(
        [{"image_id": item.external_id, "caption": f"secret of {item.external_id}"} for item in dataset.items.all()]
    ).encode()
    for public in (False, True):
        submission = submission_create(
            owner=captioner,
            dataset=dataset,
            file_name=f"r{public}.json",
            content=content.replace(b"secret", b"public secret" if public else b"secret"),
            method=MethodInfo(f"Secret {public}"),
            is_public=public,
        )
        for caption in Caption.objects.filter(system=submission.system):
            # Rated and scored as disagreeing as can be: still never compared nor shown.
            Judgment.objects.create(caption=caption, dimension="overall", value=4)
            Score.objects.create(caption=caption, metric_version=bleu.current_version, value=-1)
    for viewer in (None, captioner):
        found = metric_disagreements(metric=bleu, viewer=viewer)
        assert (found.compared, found.ranked, found.totals.discordant) == (5, 3, 7)
    client.force_login(captioner)
    page = _page(client, "/metrics/bleu_x/disagreements/")
    assert "secret of" not in page
    assert "hand caption 0" in page


def test_a_pairwise_dataset_counts_the_pairs_where_the_metric_prefers_the_loser(client):
    dataset = DatasetFactory(
        slug="pairs", kind=Dataset.Kind.PAIRWISE, source_format="pascal50s", dimensions=["preference"]
    )
    system = SystemFactory(dataset=dataset, slug="mixed", kind="mixed")
    metric = _metric("cider_x", "CIDEr-X")
    captions = {}
    for external_id, scores in {"one": [0.1, 0.9, 0.5], "two": [0.2, 0.8], "three": [0.6, 0.4]}.items():
        item = ItemFactory(dataset=dataset, external_id=external_id, references=["r"])
        for i, value in enumerate(scores):
            caption = CaptionFactory(item=item, system=system, external_id=str(i), text=f"{external_id}/{i}")
            Score.objects.create(caption=caption, metric_version=metric.current_version, value=value)
            captions[external_id, i] = caption
    _scoring_recorded(dataset, metric)

    def pair(number, external_id, a, b, winner, category="HC", votes=(None, None)):
        PairJudgment.objects.create(
            dataset=dataset,
            item=captions[external_id, a].item,
            external_id=str(number),
            caption_a=captions[external_id, a],
            caption_b=captions[external_id, b],
            category=category,
            winner=winner,
            votes_a=votes[0],
            votes_b=votes[1],
        )

    pair(1, "one", 0, 1, "a")  # people: 0; the metric: 1 (disagrees)
    pair(2, "one", 0, 2, "b")  # agrees
    pair(3, "one", 1, 2, "tie")  # no choice by people
    pair(4, "one", 2, 1, "a", category="MM")  # disagrees
    pair(5, "two", 0, 1, "b")  # agrees
    pair(6, "three", 0, 1, "", votes=(1, 4))  # votes only: people chose 1, the metric 0
    found = metric_disagreements(metric=metric, viewer=None, dataset="pairs")
    assert found.paired and found.dimensions == ["HC", "MM"] and found.dimension == ""
    assert (found.compared, found.ranked) == (3, 2)
    assert [(e.item.external_id, e.counts.discordant, e.counts.concordant) for e in found.items] == [
        ("one", 2, 1),
        ("three", 1, 0),
    ]
    assert found.items[0].counts.people_tied == 1
    assert [p.outcome for p in found.items[0].pairs][:2] == ["disagrees", "disagrees"]
    only = metric_disagreements(metric=metric, viewer=None, dataset="pairs", dimension="MM")
    assert [(e.item.external_id, e.counts.discordant) for e in only.items] == [("one", 1)]
    page = _page(client, "/metrics/cider_x/disagreements/?dataset=pairs&dimension=HC")
    assert "prefers the other" in page
    assert "one/1" in page
    assert "two/0" not in page


def test_bad_query_values_answer_200_or_404_and_a_private_dataset_404(client, rated):
    dataset, bleu = rated
    for query in ("?page=abc", "?page=-4", "?page=99999", "?dimension=nope", "?dataset=", "?dataset=rated&page=1e9"):
        assert client.get(f"/metrics/bleu_x/disagreements/{query}").status_code == 200, query
    assert client.get("/metrics/bleu_x/disagreements/?dimension=fluency").status_code == 200  # nothing rated there
    assert client.get("/metrics/nope/disagreements/").status_code == 404
    assert client.get("/metrics/bleu_x/disagreements/?dataset=nope").status_code == 404
    assert client.post("/metrics/bleu_x/disagreements/").status_code == 405
    Dataset.objects.filter(pk=dataset.pk).update(is_public=False)
    assert client.get("/metrics/bleu_x/disagreements/?dataset=rated").status_code == 404
    page = _page(client, "/metrics/bleu_x/disagreements/")
    assert "has not scored a dataset with human judgments yet" in page
    assert "hand caption" not in page


def test_one_rated_caption_per_image_is_said_in_plain_words(client):
    dataset = DatasetFactory(slug="single", dimensions=["overall"])
    system = SystemFactory(dataset=dataset, slug="model")
    metric = _metric("spice_x", "SPICE-X")
    for external_id in ("a", "b"):
        _item(dataset, system, external_id, [3], {metric: [0.5]})
    found = metric_disagreements(metric=metric, viewer=None)
    assert (found.compared, found.ranked, found.items) == (0, 0, [])
    page = _page(client, "/metrics/spice_x/disagreements/")
    assert "no pair of captions to compare within an image" in page
