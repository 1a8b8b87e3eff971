"""A submission's progress while it is scored, and its results once scored."""

from __future__ import annotations

from rest_framework import serializers

from api.documentation.base import Number, Schema
from api.documentation.boards import IntegrityFlag


class MetricProgress(Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    failed = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True, help_text="what went wrong, in plain words")
    batches_ahead = serializers.IntegerField(help_text="batches queued before this metric's first")
    seconds = serializers.FloatField()


class NotComputedHere(Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    words = serializers.CharField(help_text="why, in plain words")


class Progress(Schema):
    submission = serializers.IntegerField()
    status = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    captions = serializers.IntegerField()
    done = serializers.IntegerField(help_text="scores computed, summed over `metrics`")
    total = serializers.IntegerField(help_text="scores to compute, summed over `metrics`")
    metrics = MetricProgress(many=True, help_text="the metrics this server computes")
    unavailable = NotComputedHere(
        many=True, help_text="the metrics this server does not compute: never queued, in no total"
    )
    not_computed_here = serializers.CharField(allow_blank=True, help_text="those in the one line the pages print")
    final = serializers.BooleanField(help_text="no metric is queued or running any more")


class Gap(Number):
    system = serializers.CharField()
    name = serializers.CharField()
    gap = serializers.FloatField(help_text="ours − theirs on the metric's scale (> 0 is better when higher is better)")
    gap_points = serializers.FloatField(help_text="the same in points")


class ResultLine(Number):
    metric = serializers.CharField()
    name = serializers.CharField()
    aggregation = serializers.CharField(help_text="`mean` or `corpus`: how the number is formed")
    higher_is_better = serializers.BooleanField()
    rank = serializers.IntegerField(help_text="among the public systems with a number and this one (1 = best)")
    ranked = serializers.IntegerField(help_text="how many systems the rank is among")
    tied = serializers.BooleanField()
    best = Gap(allow_null=True, help_text="the best other public system")
    baselines = Gap(many=True)


class PendingLine(Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    words = serializers.CharField(help_text="what it means, in plain words")
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class Results(Schema):
    submission = serializers.IntegerField()
    status = serializers.CharField()
    final = serializers.BooleanField()
    dataset = serializers.CharField()
    system = serializers.CharField()
    public_systems = serializers.IntegerField(help_text="public systems on the board besides this one")
    results = ResultLine(many=True)
    pending = PendingLine(many=True, help_text="queued or running")
    missing = PendingLine(many=True, help_text="failed or not available on this server")
    flags = IntegrityFlag(many=True, help_text="what the integrity checks found; a warning, not a refusal")
