"""`manage.py scoring estimate`: what the judges would send and cost on a dataset, sending nothing,
with the reply length observed in earlier scores once there are some."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from catalog.models import Caption
from scoring.models import MetricVersion, Score
from scoring.services.metrics import metrics_sync
from tests.platform.scoring.pictures import attach_images

pytestmark = pytest.mark.django_db


def estimate(*arguments) -> str:
    out = io.StringIO()
    call_command("scoring", "estimate", *arguments, stdout=out)
    return out.getvalue()


def test_the_judges_are_estimated_on_the_datasets_own_captions_and_nothing_is_sent(
    judge_server, demo_dataset, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"
    attach_images(demo_dataset, 60, tmp_path)
    own = Caption.objects.filter(item__dataset=demo_dataset, system__submission__isnull=True)
    pictured = own.filter(item__media__stored_path__gt="").count()
    text = estimate("demo", "--metric", "gveval_combined", "--metric", "bleu_4")
    assert judge_server.requests == []
    assert "gveval_combined on openai-compatible:gpt-4o-2024-05-13" in text
    assert f"rows {own.count():,} ({own.count() - pictured:,} cannot be judged); requests {pictured:,}" in text
    assert "assumed: 150 per reply" in text
    assert "(OpenAI list price of gpt-4o-2024-05-13)" in text
    assert "bleu_4: not a language-model judge" in text


def test_the_reply_length_observed_in_earlier_scores_is_used(judge_server, demo_dataset):
    metrics_sync()
    version = MetricVersion.objects.get(metric__slug="clair")
    captions = list(Caption.objects.filter(item__dataset=demo_dataset)[:2])
    Score.objects.create(
        caption=captions[0],
        metric_version=version,
        value=0.5,
        input_key=b"a",
        detail={"draws": 2, "completion_tokens": 100},
    )
    Score.objects.create(
        caption=captions[1],
        metric_version=version,
        value=None,
        input_key=b"b",
        detail={"draws": 1, "completion_tokens": 40, "error": "unparseable reply"},
    )
    [line] = estimate("demo", "--metric", "clair", "--json").splitlines()
    found = json.loads(line)
    rows = Caption.objects.filter(item__dataset=demo_dataset, system__submission__isnull=True).count()
    assert found["requests"] == rows
    assert found["completion_tokens"] == 45 * rows
    assert found["completion_basis"] == "observed: mean 45 per reply over 2 earlier scored captions"
    assert found["cost_usd"] == pytest.approx((found["prompt_tokens"] * 5 + found["completion_tokens"] * 15) / 1e6)


def test_unknown_datasets_and_metrics_are_refused(demo_dataset):
    with pytest.raises(CommandError, match="no dataset 'nope'"):
        estimate("nope")
    with pytest.raises(CommandError, match="unknown metric"):
        estimate("demo", "--metric", "gveval_sideways")
