"""Citable snapshots over the API: boards frozen by staff, numbered and never changed."""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets

from api import documentation as shapes
from api import snapshot_serializers as serializers
from catalog.models import Dataset
from leaderboards.models import CitableSnapshot


@extend_schema_view(
    list=extend_schema(
        parameters=[
            shapes.query("board", "`captioner` or `metric`", enum=("captioner", "metric")),
            shapes.query("dataset", "a captioner board's dataset slug"),
        ]
    )
)
class CitableSnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    """Citable snapshots: boards frozen by staff, numbered per board and never changed (newest first);
    one's `board_json` is the board as it was."""

    def get_serializer_class(self):
        return (
            serializers.CitableSnapshotDetailSerializer
            if self.action == "retrieve"
            else serializers.CitableSnapshotSerializer
        )

    def get_queryset(self):
        query = self.request.query_params
        snapshots = CitableSnapshot.objects.filter(
            Q(dataset__isnull=True) | Q(dataset__in=Dataset.objects.visible_to(self.request.user))
        ).select_related("dataset")
        if self.action == "list":
            snapshots = snapshots.defer("payload")
        if query.get("board"):
            snapshots = snapshots.filter(board=query["board"])
        if query.get("dataset"):
            snapshots = snapshots.filter(dataset__slug=query["dataset"])
        return snapshots.order_by("-created_at", "-id")
