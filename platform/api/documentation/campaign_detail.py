"""A human-evaluation campaign's detail: its results, annotators and the pairs who answer alike."""

from __future__ import annotations

from rest_framework import serializers

from api.campaign_serializers import CampaignSerializer
from api.documentation.base import Number, Schema


class AgreementInterval(Schema):
    value = serializers.FloatField(help_text="Krippendorff's α (interval level, captions as units)")
    low = serializers.FloatField(allow_null=True, help_text="its 95% interval (captions resampled)")
    high = serializers.FloatField(allow_null=True)
    replicates = serializers.IntegerField()
    ratings = serializers.IntegerField()
    captions = serializers.IntegerField()


class PeopleNumber(Number):
    value = serializers.FloatField(help_text="the mean rating (rating), or the Bradley–Terry strength 0–100 (arena)")
    n = serializers.IntegerField(help_text="ratings (rating) or comparisons (arena)")
    theta = serializers.FloatField(required=False, help_text="arena: the log-strength")
    rank = serializers.IntegerField(required=False, help_text="arena: 1 = strongest")
    wins = serializers.IntegerField(required=False)
    losses = serializers.IntegerField(required=False)
    ties = serializers.IntegerField(required=False)


class AnnotatorQuality(Schema):
    answers = serializers.IntegerField()
    skips = serializers.IntegerField()
    gold = serializers.IntegerField(help_text="known-answer checks answered")
    gold_passed = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    flagged = serializers.BooleanField(help_text="gold accuracy below the campaign's bar")
    excluded = serializers.BooleanField(help_text="their answers are left out of the results")


class BradleyTerrySettings(Schema):
    alpha = serializers.FloatField(help_text="the ridge penalty")
    comparisons = serializers.IntegerField()
    items = serializers.IntegerField(help_text="images (the units the bootstrap resamples)")
    replicates = serializers.IntegerField()
    seed = serializers.IntegerField()


class CampaignResults(Schema):
    people_dimension = serializers.CharField(help_text="`mean` (of the rubric's dimensions) or `arena`")
    people = serializers.DictField(child=PeopleNumber(), help_text="per system id the caller may see")
    agreement = serializers.DictField(
        child=AgreementInterval(allow_null=True),
        allow_null=True,
        help_text="per dimension (and `mean`); null in an arena, or on a hidden test set (staff only)",
    )
    bradley_terry = BradleyTerrySettings(allow_null=True, help_text="an arena's fit; null in a rating campaign")
    annotators = serializers.DictField(
        child=AnnotatorQuality(), allow_null=True, help_text="per pseudonym; null on a hidden test set (staff only)"
    )
    answers = serializers.IntegerField()
    gold_answers = serializers.IntegerField()
    flagged = serializers.IntegerField(help_text="annotators flagged")
    median_seconds = serializers.FloatField(allow_null=True, help_text="per answer")
    median_annotator_seconds = serializers.FloatField(allow_null=True, help_text="the median of each one's median")
    metrics = serializers.ListField(child=serializers.CharField(), help_text="metrics with live correlations")
    computed_at = serializers.DateTimeField()


class AnnotatorResemblance(Schema):
    accounts = serializers.ListField(child=serializers.CharField(), help_text="the two accounts' usernames")
    annotators = serializers.ListField(child=serializers.CharField(), help_text="their pseudonyms in the campaign")
    common = serializers.IntegerField(help_text="tasks both answered (gold checks left out)")
    agreed = serializers.IntegerField(help_text="of those, answered the same")
    rate = serializers.FloatField()
    expected = serializers.FloatField(help_text="how often two of the campaign's other annotators answer the same")
    p_value = serializers.FloatField(help_text="the binomial chance of agreeing that often at `expected`")
    together = serializers.IntegerField(help_text="common tasks both answered within 10 seconds")
    suspicious = serializers.BooleanField(help_text="p_value under 0.001 shared among all the pairs")


class CampaignDetail(CampaignSerializer):
    results = CampaignResults(allow_null=True, help_text="null until its results are first computed")
    resemblance = AnnotatorResemblance(
        many=True,
        allow_null=True,
        help_text="staff only (null for everyone else): pairs of annotators who answer alike, most alike first",
    )

    class Meta(CampaignSerializer.Meta):
        fields = [*CampaignSerializer.Meta.fields, "results", "resemblance"]
