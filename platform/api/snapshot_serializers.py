"""Citable snapshots as the API gives them: what each is, its provenance and its files' addresses."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalog.citations import absolute
from catalog.models import Dataset
from leaderboards.citable import public_metric_slugs, shown_payload, shown_provenance, snapshot_url
from leaderboards.models import CitableSnapshot


class CitableSnapshotSerializer(serializers.ModelSerializer):
    dataset: serializers.SlugRelatedField[Dataset] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, allow_null=True
    )
    provenance = serializers.SerializerMethodField(
        help_text="metric versions, protocol versions and data fingerprints behind its numbers"
    )
    page = serializers.SerializerMethodField(help_text="its page (with a BibTeX entry)")
    json = serializers.SerializerMethodField(help_text="its JSON download")
    csv = serializers.SerializerMethodField(help_text="its CSV download")

    class Meta:
        model = CitableSnapshot
        fields = [
            "id",
            "board",
            "dataset",
            "number",
            "created_at",
            "note",
            "digest",
            "provenance",
            "page",
            "json",
            "csv",
        ]

    def _url(self, snapshot: CitableSnapshot, suffix: str) -> str:
        return absolute(snapshot_url(snapshot) + suffix)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_provenance(self, snapshot: CitableSnapshot) -> dict:
        root = self.root  # (a list's serializer: read once per answer, not once per snapshot listed)
        if getattr(root, "public_metrics", None) is None:
            root.public_metrics = public_metric_slugs()  # type: ignore[attr-defined]
        return shown_provenance(snapshot, public_metrics=root.public_metrics)  # type: ignore[attr-defined]

    def get_page(self, snapshot: CitableSnapshot) -> str:
        return self._url(snapshot, "")

    def get_json(self, snapshot: CitableSnapshot) -> str:
        return self._url(snapshot, "").rstrip("/") + ".json"

    def get_csv(self, snapshot: CitableSnapshot) -> str:
        return self._url(snapshot, "").rstrip("/") + ".csv"


class CitableSnapshotDetailSerializer(CitableSnapshotSerializer):
    board_json = serializers.SerializerMethodField(
        help_text="the board as the API gave it when frozen; a row withdrawn or made private since loses its "
        "names and links (`withdrawn`: true)"
    )

    class Meta(CitableSnapshotSerializer.Meta):
        fields = [*CitableSnapshotSerializer.Meta.fields, "board_json"]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_board_json(self, snapshot: CitableSnapshot) -> dict:
        return shown_payload(snapshot)
