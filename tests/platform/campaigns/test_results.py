"""A campaign's refresh: Krippendorff's α per dimension as the `krippendorff` package computes it
from the stored judgments, the people column as the mean of the ratings' means, the metric's
correlations with the ratings stored under the campaign's "live" protocol (against scipy), the arena's
people column as the Bradley–Terry strengths of its comparisons; a submission made private leaves at
the next refresh."""

from __future__ import annotations

import json
import random
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from scipy import stats

from campaigns.models import Annotation, Campaign, CampaignResults
from campaigns.selectors import board_people, campaign_results
from campaigns.services.results import campaign_refresh
from capbench_eval.metaeval.bradley_terry import bradley_terry
from catalog.models import Caption, Item, Judgment
from catalog.uploads.services import upload_visibility_set, upload_withdraw
from scoring.models import CorrelationResult, Metric, MetricVersion, Score
from submissions.services import SUBMISSIONS, MethodInfo, submission_create
from tests.platform.campaigns.helpers import in_turns, noisy_rubric
from workbench.models import MetricSubmission
from workbench.services import METRICS

pytestmark = pytest.mark.django_db
DIMENSIONS = ["accuracy", "completeness", "conciseness", "relevance"]


def scored_metric(slug: str, campaign: Campaign, *, higher_is_better: bool = True) -> Metric:
    """A built-in metric whose current version scored every caption of the campaign's systems."""
    metric = Metric.objects.create(slug=slug, name=slug, family="ngram", higher_is_better=higher_is_better)
    metric.current_version = MetricVersion.objects.create(metric=metric, version="1", config_hash=slug[:16])
    metric.save()
    rng = random.Random(slug)
    captions = Caption.objects.filter(system__in=campaign.systems.all()).select_related("system")
    Score.objects.bulk_create(
        Score(
            caption=caption,
            metric_version=metric.current_version,
            value=(0.7 if caption.system.name == "Careful" else 0.3) + rng.gauss(0, 0.2),
        )
        for caption in captions
    )
    return metric


def ratings(campaign: Campaign) -> dict[tuple[int, str], dict[str, float]]:
    """(caption, annotator) -> {dimension: value}, from the stored judgments."""
    found: dict[tuple[int, str], dict[str, float]] = defaultdict(dict)
    for caption, annotator, dimension, value in Judgment.collected.filter(source=campaign.source).values_list(
        "caption_id", "annotator", "dimension", "value"
    ):
        found[(caption, annotator)][dimension] = value
    return found


def alpha_oracle(by_rating: dict, value) -> float:
    """krippendorff.alpha over annotators × captions (missing cells nan) of `value(ratings)`."""
    annotators = sorted({annotator for _, annotator in by_rating})
    captions = sorted({caption for caption, _ in by_rating})
    data = np.full((len(annotators), len(captions)), np.nan)
    for (caption, annotator), values in by_rating.items():
        data[annotators.index(annotator), captions.index(caption)] = value(values)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="interval")


def test_rating_refresh_agreement_people_and_live_correlations(make_campaign, make_user, submitted):
    campaign = make_campaign(ratings_wanted=3, gold_rate=0)
    people = [make_user(name) for name in ("ann", "ned", "eve")]
    assert in_turns(campaign, people, noisy_rubric(campaign, seed=3), rounds=20) == 60
    higher = scored_metric("live_probe", campaign)
    lower = scored_metric("live_probe_low", campaign, higher_is_better=False)
    results = campaign_refresh(campaign_id=campaign.pk)
    payload = results.payload
    assert CampaignResults.objects.get(campaign=campaign).pk == results.pk

    by_rating = ratings(campaign)
    assert len(by_rating) == 60
    assert {len(values) for values in by_rating.values()} == {4}
    for dimension in DIMENSIONS:
        cell = payload["agreement"][dimension]
        assert cell["value"] == pytest.approx(alpha_oracle(by_rating, lambda v, d=dimension: v[d]), abs=1e-9)
        assert cell["ratings"] == 60
        assert cell["low"] <= cell["value"] <= cell["high"]
    mean_alpha = alpha_oracle(by_rating, lambda v: np.mean(list(v.values())))
    assert payload["agreement"]["mean"]["value"] == pytest.approx(mean_alpha, abs=1e-9)

    system_of = dict(Caption.objects.filter(pk__in={c for c, _ in by_rating}).values_list("pk", "system_id"))
    by_system = defaultdict(list)
    for (caption, _), values in by_rating.items():
        by_system[system_of[caption]].append(np.mean(list(values.values())))
    assert set(payload["people"]) == {str(s.system_id) for s in submitted}
    for system, means in by_system.items():
        cell = payload["people"][str(system)]
        assert cell["value"] == pytest.approx(np.mean(means), abs=1e-12)
        assert cell["n"] == len(means)
    careful, careless = (payload["people"][str(s.system_id)]["value"] for s in submitted)
    assert careful > careless  # the noisy raters still tell them apart
    assert payload["answers"] == 60
    assert payload["people_dimension"] == "mean"
    assert set(payload["metrics"]) == {"live_probe", "live_probe_low"}

    stored = CorrelationResult.objects.filter(protocol=campaign.protocol_key)
    assert set(stored.values_list("protocol_name", "protocol_version")) == {("live", "1")}
    assert set(stored.values_list("dimension", flat=True)) == {*DIMENSIONS, "mean"}
    assert set(stored.values_list("statistic", flat=True)) == {"tau_b", "tau_c", "pearson", "spearman"}
    # the caption-level pearson of the mean rating: one row per rating, the caption's score repeated
    score = dict(Score.objects.filter(metric_version=higher.current_version).values_list("caption_id", "value"))
    keys = sorted(by_rating)
    human = [np.mean(list(by_rating[key].values())) for key in keys]
    machine = [score[caption] for caption, _ in keys]
    found = stored.get(metric_version=higher.current_version, dimension="mean", statistic="pearson", level="caption")
    assert found.value == pytest.approx(stats.pearsonr(human, machine).statistic, abs=1e-9)
    assert found.n == 60
    assert found.dataset_id == campaign.dataset_id
    # a lower-is-better metric's scores are turned round: the same numbers, the same agreement
    turned = stored.get(metric_version=lower.current_version, dimension="mean", statistic="pearson", level="caption")
    lowered = dict(Score.objects.filter(metric_version=lower.current_version).values_list("caption_id", "value"))
    expected = stats.pearsonr(human, [-lowered[caption] for caption, _ in keys]).statistic
    assert turned.value == pytest.approx(expected, abs=1e-9)

    # Ada's submission made private: gone from the people column and the correlations at the next refresh.
    ada_submission, bob_submission = submitted
    upload_visibility_set(upload=ada_submission, is_public=False, kind=SUBMISSIONS)
    payload = campaign_refresh(campaign_id=campaign.pk).payload
    assert set(payload["people"]) == {str(bob_submission.system_id)}
    bob_ratings = sum(1 for caption, _ in by_rating if system_of[caption] == bob_submission.system_id)
    assert payload["people"][str(bob_submission.system_id)]["n"] == bob_ratings
    found.refresh_from_db()
    assert found.n == bob_ratings < 60
    assert Judgment.collected.filter(source=campaign.source).count() == 240  # the ratings stay stored


def test_arena_people_are_the_bradley_terry_strengths(make_campaign, make_user, submitted):
    campaign = make_campaign("arena", mode=Campaign.Mode.ARENA, ratings_wanted=2, gold_rate=0)
    careful = submitted[0].system_id
    rng = random.Random(7)

    def choose(task, user) -> str:
        if rng.random() < 0.15:
            return "tie"
        left_is_careful = task.caption.system_id == careful
        careful_wins = rng.random() < 0.7
        return "left" if left_is_careful == careful_wins else "right"

    people = [make_user(name) for name in ("ann", "ned", "eve")]
    assert in_turns(campaign, people, choose, rounds=15) == 45
    metric = scored_metric("arena_probe", campaign)
    payload = campaign_refresh(campaign_id=campaign.pk).payload

    comparisons = [
        (left_system, right_system, winner, item)
        for left_system, right_system, winner, item in Annotation.objects.filter(
            campaign=campaign, status=Annotation.Status.ANSWERED
        )
        .order_by("id")
        .values_list("caption__system_id", "other__system_id", "winner", "item_id")
    ]
    fitted = bradley_terry(comparisons, sorted(s.system_id for s in submitted)).by_system()
    assert set(payload["people"]) == {str(s.system_id) for s in submitted}
    for system, rating in fitted.items():
        cell = payload["people"][str(system)]
        assert cell["value"] == pytest.approx(rating.strength, abs=1e-9)
        assert cell["n"] == rating.comparisons == 45
        assert (cell["wins"], cell["losses"], cell["ties"]) == (rating.wins, rating.losses, rating.ties)
        assert cell["low"] == pytest.approx(rating.interval.low)
        assert cell["high"] == pytest.approx(rating.interval.high)
    assert payload["people"][str(careful)]["value"] > 50 > payload["people"][str(submitted[1].system_id)]["value"]
    assert payload["people_dimension"] == "arena"
    assert "agreement" not in payload

    # the metric's pairwise accuracy on the decided comparisons, by hand
    score = dict(Score.objects.filter(metric_version=metric.current_version).values_list("caption_id", "value"))
    decided = Annotation.objects.filter(campaign=campaign, winner__in=["left", "right"]).values_list(
        "caption_id", "other_id", "winner"
    )
    right = [(score[a] > score[b]) if winner == "left" else (score[b] > score[a]) for a, b, winner in decided]
    found = CorrelationResult.objects.get(
        protocol=campaign.protocol_key, metric_version=metric.current_version, statistic="accuracy"
    )
    assert found.protocol_name == "live"
    assert found.dimension == "arena"
    assert found.value == pytest.approx(np.mean(right))
    assert found.n == len(right)


@pytest.mark.slow
def test_a_submitted_metric_hidden_since_the_refresh_is_no_longer_named(make_campaign, make_user, submitted, client):
    """`results.metrics` names the metrics with live correlations: a submitted metric made private
    or withdrawn after the refresh leaves it at once on every read (the API; the page reads the same
    selector), as it would never leave a closed campaign that gets no more answers; its owner still
    sees it, as everywhere."""
    campaign = make_campaign(ratings_wanted=3, gold_rate=0)
    people = [make_user(name) for name in ("ann", "ned", "eve")]
    in_turns(campaign, people, noisy_rubric(campaign, seed=5), rounds=10)
    scored_metric("live_probe", campaign)
    uploaded = scored_metric("qzuploaded-probe-1a2b3c", campaign)
    Metric.objects.filter(pk=uploaded.pk).update(family="submitted", is_registered=False)
    owner = submitted[0].owner
    submission = MetricSubmission.objects.create(owner=owner, metric=uploaded, is_public=True)
    campaign_refresh(campaign_id=campaign.pk)
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    url = f"/api/v1/campaigns/{campaign.slug}/"
    assert client.get(url).json()["results"]["metrics"] == ["live_probe", "qzuploaded-probe-1a2b3c"]

    upload_visibility_set(upload=submission, is_public=False, kind=METRICS)
    assert client.get(url).json()["results"]["metrics"] == ["live_probe"]
    assert "qzuploaded" not in client.get(url).content.decode()
    client.force_login(owner)
    assert client.get(url).json()["results"]["metrics"] == ["live_probe", "qzuploaded-probe-1a2b3c"]
    assert campaign_results(campaign, make_user("stranger"))["metrics"] == ["live_probe"]
    upload_visibility_set(upload=submission, is_public=True, kind=METRICS)
    upload_withdraw(upload=submission, kind=METRICS)
    client.logout()
    assert client.get(url).json()["results"]["metrics"] == ["live_probe"]


@pytest.mark.slow
def test_an_arena_read_after_a_system_is_hidden_ranks_and_counts_the_visible_games_alone(
    demo_dataset, make_campaign, make_user, submitted, client, settings
):
    """A system made private after the refresh: at once (before the refresh its change schedules),
    the others' ranks close the gap it leaves, and their comparisons, wins, losses and ties count
    only the games between systems the reader may see, on the API, the page and the board's column."""
    careful, careless = submitted
    middling = submission_create(
        owner=make_user("cy"),
        dataset=demo_dataset,
        file_name="Middling.json",
        content=json.dumps(
            [
                {"image_id": i.external_id, "caption": f"middling {i.external_id}"}
                for i in Item.objects.filter(dataset=demo_dataset)
            ]
        ).encode(),
        method=MethodInfo("Middling"),
        metrics=["rouge_l"],
        is_public=True,
    )
    systems = [careful.system, middling.system, careless.system]
    campaign = make_campaign("arena", mode=Campaign.Mode.ARENA, systems=systems, ratings_wanted=2, gold_rate=0)
    strength = {careful.system_id: 3, middling.system_id: 2, careless.system_id: 1}

    def choose(task, user) -> str:
        if task.item_id % 4 == 0:
            return "tie"
        left, right = strength[task.caption.system_id], strength[task.other.system_id]
        return "left" if left > right else "right"

    people = [make_user(name) for name in ("ann", "ned", "eve")]
    assert in_turns(campaign, people, choose, rounds=30) == 90
    campaign_refresh(campaign_id=campaign.pk)
    before = campaign_results(campaign, None)["people"]
    assert {int(s): cell["rank"] for s, cell in before.items()} == {
        careful.system_id: 1,
        middling.system_id: 2,
        careless.system_id: 3,
    }

    upload_visibility_set(upload=careful, is_public=False, kind=SUBMISSIONS)  # the strongest: rank 1 leaves
    games = Annotation.objects.filter(campaign=campaign, status=Annotation.Status.ANSWERED).values_list(
        "caption__system_id", "other__system_id", "winner"
    )
    visible = {middling.system_id, careless.system_id}
    between = [(left, right, winner) for left, right, winner in games if {left, right} == visible]
    assert 0 < len(between) < len(games)

    def by_hand(system: int) -> dict:
        wins = sum((left == system) == (winner == "left") for left, _, winner in between if winner != "tie")
        ties = sum(winner == "tie" for _, _, winner in between)
        return {"wins": wins, "losses": len(between) - wins - ties, "ties": ties, "n": len(between)}

    results = client.get(f"/api/v1/campaigns/{campaign.slug}/").json()["results"]
    assert set(results["people"]) == {str(s) for s in visible}
    for system, rank in ((middling.system_id, 1), (careless.system_id, 2)):
        cell = results["people"][str(system)]
        assert cell["rank"] == rank
        assert {key: cell[key] for key in ("wins", "losses", "ties", "n")} == by_hand(system)
        assert "against" not in cell
    assert results["bradley_terry"]["comparisons"] == len(between)
    page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
    counts = by_hand(middling.system_id)
    assert f"{counts['wins']} · {counts['losses']} · {counts['ties']}" in page
    Campaign.objects.filter(pk=campaign.pk).update(on_board=True)  # the board's column: the same counts
    settings.CAPBENCH_PEOPLE_ANSWERS, settings.CAPBENCH_PEOPLE_IMAGES = 1, 1
    column = board_people(demo_dataset).column
    assert column is not None and column.comparisons == len(between)
    assert column.cells[middling.system_id]["note"] == f"{len(between)} comparisons in {campaign.title}"

    # Its owner still reads the whole stored results, their own system first.
    mine = campaign_results(campaign, careful.owner)["people"]
    assert mine[str(careful.system_id)]["rank"] == 1
    assert mine[str(middling.system_id)]["n"] == before[str(middling.system_id)]["n"]
