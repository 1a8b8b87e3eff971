"""Live human evaluation's campaigns and their results as the API gives them."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from campaigns.models import Campaign
from campaigns.selectors import campaign_results, campaign_systems_shown
from catalog.citations import absolute
from catalog.models import Dataset, System
from scoring.shown import Shown


class RubricDimensionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="the judgment dimension its ratings are stored under")
    name = serializers.CharField()
    definition = serializers.CharField(help_text="what annotators are shown beside the rating buttons")
    low = serializers.IntegerField()
    high = serializers.IntegerField()
    labels = serializers.DictField(child=serializers.CharField(), help_text="a rating (as text) -> the word shown")


class CampaignSystemSerializer(serializers.ModelSerializer):
    class Meta:
        model = System
        fields = ["id", "slug", "name"]


class CampaignSerializer(serializers.ModelSerializer):
    dataset: serializers.SlugRelatedField[Dataset] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    rubric = RubricDimensionSerializer(many=True, read_only=True, help_text="the dimensions rated (none in an arena)")
    systems = serializers.SerializerMethodField(help_text="its systems the caller may see")
    answers = serializers.IntegerField(read_only=True, help_text="tasks answered (gold checks among them)")
    annotator_count = serializers.IntegerField(read_only=True, help_text="people who answered at least once")
    url = serializers.SerializerMethodField(help_text="its page")

    class Meta:
        model = Campaign
        fields = [
            "slug",
            "title",
            "description",
            "dataset",
            "mode",
            "rubric",
            "status",
            "audience",
            "ratings_wanted",
            "systems",
            "answers",
            "annotator_count",
            "url",
        ]

    @extend_schema_field(CampaignSystemSerializer(many=True))
    def get_systems(self, campaign: Campaign) -> list:
        request = self.context.get("request")
        shown = campaign_systems_shown(campaign, request.user if request is not None else None)
        return list(CampaignSystemSerializer(shown, many=True).data)

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, campaign: Campaign) -> str:
        return absolute(reverse("campaigns:detail", args=[campaign.slug]))


def campaign_results_json(campaign: Campaign, viewer) -> dict | None:
    """A campaign's stored results as the caller may read them (campaigns.selectors.campaign_results),
    every key present: null where it does not apply (an arena's agreement, a rating's Bradley–Terry
    fit) or is withheld (a hidden test set's agreement and annotators are staff's); null before its
    first refresh."""
    found = campaign_results(campaign, viewer)
    if found is None:
        return None
    return {
        "people_dimension": found.get("people_dimension", ""),
        # A rating or a strength is shown as it is (points = value: docs/api.md "Numbers").
        "people": {
            system: {**cell, **Shown(cell.get("value"), cell.get("low"), cell.get("high")).json()}
            for system, cell in (found.get("people") or {}).items()
        },  # fmt: skip
        "agreement": found.get("agreement"),
        "bradley_terry": found.get("bradley_terry"),
        "annotators": found.get("annotators"),
        "answers": found.get("answers", 0),
        "gold_answers": found.get("gold_answers", 0),
        "flagged": found.get("flagged", 0),
        "median_seconds": found.get("median_seconds"),
        "median_annotator_seconds": found.get("median_annotator_seconds"),
        "metrics": found.get("metrics", []),
        "computed_at": serializers.DateTimeField().to_representation(found["computed_at"]),
    }
