"""A campaign's refresh: Krippendorff's α per dimension as the `krippendorff` package computes it
from the stored judgments, the people column as the mean of the ratings' means, the metric's
correlations with the ratings stored under the campaign's "live" protocol (against scipy), the arena's
people column as the Bradley–Terry strengths of its comparisons; a submission made private leaves at
the next refresh."""

from __future__ import annotations

import random
from collections import defaultdict

import krippendorff
import numpy as np
import pytest
from scipy import stats

from campaigns.models import Annotation, Campaign, CampaignResults
from campaigns.services.results import campaign_refresh
from catalog.models import Caption, Judgment
from evaluation.metaeval.bradley_terry import bradley_terry
from scoring.models import CorrelationResult, Metric, MetricVersion, Score
from submissions.services import submission_visibility_set
from tests.platform.campaigns.helpers import in_turns, noisy_rubric

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
    assert len(by_rating) == 60 and {len(values) for values in by_rating.values()} == {4}
    for dimension in DIMENSIONS:
        cell = payload["agreement"][dimension]
        assert cell["value"] == pytest.approx(alpha_oracle(by_rating, lambda v, d=dimension: v[d]), abs=1e-9)
        assert cell["ratings"] == 60 and cell["low"] <= cell["value"] <= cell["high"]
    mean_alpha = alpha_oracle(by_rating, lambda v: np.mean(list(v.values())))
    assert payload["agreement"]["mean"]["value"] == pytest.approx(mean_alpha, abs=1e-9)

    system_of = dict(Caption.objects.filter(pk__in={c for c, _ in by_rating}).values_list("pk", "system_id"))
    by_system = defaultdict(list)
    for (caption, _), values in by_rating.items():
        by_system[system_of[caption]].append(np.mean(list(values.values())))
    assert set(payload["people"]) == {str(s.system_id) for s in submitted}
    for system, means in by_system.items():
        cell = payload["people"][str(system)]
        assert cell["value"] == pytest.approx(np.mean(means), abs=1e-12) and cell["n"] == len(means)
    careful, careless = (payload["people"][str(s.system_id)]["value"] for s in submitted)
    assert careful > careless  # the noisy raters still tell them apart
    assert payload["answers"] == 60 and payload["people_dimension"] == "mean"
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
    assert found.value == pytest.approx(stats.pearsonr(human, machine).statistic, abs=1e-9) and found.n == 60
    assert found.dataset_id == campaign.dataset_id
    # a lower-is-better metric's scores are turned round: the same numbers, the same agreement
    turned = stored.get(metric_version=lower.current_version, dimension="mean", statistic="pearson", level="caption")
    lowered = dict(Score.objects.filter(metric_version=lower.current_version).values_list("caption_id", "value"))
    expected = stats.pearsonr(human, [-lowered[caption] for caption, _ in keys]).statistic
    assert turned.value == pytest.approx(expected, abs=1e-9)

    # Ada's submission made private: gone from the people column and the correlations at the next refresh.
    ada_submission, bob_submission = submitted
    submission_visibility_set(submission=ada_submission, is_public=False)
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
        assert cell["low"] == pytest.approx(rating.interval.low) and cell["high"] == pytest.approx(rating.interval.high)
    assert payload["people"][str(careful)]["value"] > 50 > payload["people"][str(submitted[1].system_id)]["value"]
    assert payload["people_dimension"] == "arena" and "agreement" not in payload

    # the metric's pairwise accuracy on the decided comparisons, by hand
    score = dict(Score.objects.filter(metric_version=metric.current_version).values_list("caption_id", "value"))
    decided = Annotation.objects.filter(campaign=campaign, winner__in=["left", "right"]).values_list(
        "caption_id", "other_id", "winner"
    )
    right = [(score[a] > score[b]) if winner == "left" else (score[b] > score[a]) for a, b, winner in decided]
    found = CorrelationResult.objects.get(
        protocol=campaign.protocol_key, metric_version=metric.current_version, statistic="accuracy"
    )
    assert found.protocol_name == "live" and found.dimension == "arena"
    assert found.value == pytest.approx(np.mean(right)) and found.n == len(right)
