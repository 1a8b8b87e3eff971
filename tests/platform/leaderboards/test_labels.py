"""The `labels` template filters (leaderboards/templatetags/labels.py): keys in, words out, and a
metric's name only where everyone may read it."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from scoring.models import Metric

pytestmark = pytest.mark.django_db


def render(text: str, **context) -> str:
    return Template("{% load labels %}" + text).render(Context(context))


def test_protocol_family_and_statistic_filters():
    shown = render(
        "{{ key|protocol_label }}|{{ family|family_label }}|{{ statistic|statistic_label }}",
        key="flickr8k-expert/paper@1",
        family="ngram",
        statistic="spearman",
    )
    assert shown == "Flickr8k-Expert · paper protocol (v1)|Word overlap (n-grams, METEOR)|Spearman ρ"


def test_a_metric_slug_reads_as_a_built_in_metrics_name_and_never_as_a_submitted_ones():
    Metric.objects.create(slug="label_test_bleu", name="BLEU-1 <test>", family="ngram", is_registered=True)
    Metric.objects.create(slug="label_test_mine", name="Secret name", family="submitted", is_registered=False)
    assert render("{{ slug|metric_label }}", slug="label_test_bleu") == "BLEU-1 &lt;test&gt;"  # escaped as any text
    assert render("{{ slug|metric_label }}", slug="label_test_mine") == "label_test_mine"
    assert render("{{ slug|metric_label }}", slug="no_such_metric") == "no_such_metric"
