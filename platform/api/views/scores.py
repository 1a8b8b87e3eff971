"""Per-caption scores (cursor pages read in caption order from the indexes, docs/performance.md) and
the meta-evaluation's correlation cells, as far as the caller may see them."""

from __future__ import annotations

from django.db.models import Max, Min, QuerySet
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.exceptions import ValidationError

from api import documentation as shapes
from api import serializers
from api.pagination import CaptionCursor, ScoreCursor
from catalog.models import Caption, Dataset, System
from scoring.models import CorrelationResult, Metric, MetricVersion, Score
from scoring.selectors import caption_scores

LAYOUTS = ("long", "wide")
CAPTION_RANGE = '"catalog_caption"."id" BETWEEN %s AND %s'  # the page's select_related join of Caption


# A row of either layout: a score (`long`) or a caption with its scores (`wide`).
SCORE_ROW = PolymorphicProxySerializer(
    component_name="ScoreRow",
    serializers=[serializers.ScoreSerializer, shapes.CaptionScores],
    resource_type_field_name=None,
)


@extend_schema_view(list=extend_schema(parameters=shapes.SCORE_PARAMETERS, responses=SCORE_ROW))
class ScoreViewSet(viewsets.ReadOnlyModelViewSet):
    """Per-caption scores; filter by `dataset`, `system`, `metric` (slugs). Cursor-paginated."""

    serializer_class = serializers.ScoreSerializer
    pagination_class = ScoreCursor

    def list(self, request, *args, **kwargs):
        """`layout=long` (the default): a row per score; `layout=wide`: a row per caption (docs/api.md)."""
        layout = request.query_params.get("layout") or "long"
        if layout not in LAYOUTS:
            raise ValidationError({"layout": "`long` (one row per caption and metric, the default) or `wide`"})
        if layout == "long":
            return super().list(request, *args, **kwargs)
        paginator = CaptionCursor()
        page = paginator.paginate_queryset(self._captions(), request, self) or []
        ids = [caption["id"] for caption in page]
        _, rows = caption_scores(caption_ids=ids, viewer=request.user, metric=request.query_params.get("metric"))
        return paginator.get_paginated_response([serializers.caption_scores_json(row) for row in rows])

    def _captions(self):
        """The ids of the captions the caller may see, filtered as the scores are, in id order."""
        query, viewer = self.request.query_params, self.request.user
        datasets = Dataset.objects.visible_to(viewer)
        captions = Caption.objects.listed_to(viewer)  # as the scores are: blind captions left out
        if query.get("dataset"):
            found = list(datasets.filter(slug=query["dataset"]).values_list("pk", flat=True))
            captions = captions.filter(dataset_id=found[0]) if found else captions.none()
        else:
            captions = captions.filter(dataset__in=datasets)
        if query.get("system"):
            systems = System.objects.visible_to(viewer).filter(slug=query["system"], dataset__in=datasets)
            captions = captions.filter(system_id__in=list(systems.values_list("pk", flat=True)))
        return captions.values("id")

    def get_queryset(self) -> QuerySet[Score]:
        if getattr(self, "swagger_fake_view", False):  # the schema is drawn without a database
            return Score.objects.none()
        query, viewer = self.request.query_params, self.request.user
        scores: QuerySet[Score] = Score.objects.visible_to(viewer).filter(
            metric_version__metric__in=Metric.objects.visible_to(viewer)
        )
        # Each filter becomes ids first, so that a page is read in caption order from the indexes
        # (caption_dataset_order or caption_system_order, then score_unique), whatever the number of
        # scores stored; never a sort of every match (docs/performance.md, bench/scale.py).
        datasets = Dataset.objects.visible_to(viewer)
        if query.get("dataset"):
            datasets = datasets.filter(slug=query["dataset"])
            found = list(datasets.values_list("pk", flat=True))
            if not found:
                return Score.objects.none()
            scores = scores.filter(caption__dataset_id=found[0])
        else:
            scores = scores.filter(caption__dataset__in=datasets)
        if query.get("system"):
            systems = list(
                System.objects.visible_to(viewer)
                .filter(slug=query["system"], dataset__in=datasets)
                .values_list("pk", flat=True)
            )
            scores = scores.filter(caption__system_id__in=systems)
        if query.get("metric"):
            versions = list(MetricVersion.objects.filter(metric__slug=query["metric"]).values_list("pk", flat=True))
            scores = scores.filter(metric_version_id__in=versions)
        if query.get("dataset") or query.get("system"):
            # The filtered captions' first and last ids (two index probes): the page's walk along
            # score_unique starts at the first rather than at the table's first score, which the
            # planner, expecting matches spread evenly, would otherwise do for a late system.
            captions = Caption.objects.filter(dataset_id=found[0]) if query.get("dataset") else Caption.objects
            if query.get("system"):
                captions = captions.filter(system_id__in=systems)
            bounds = captions.aggregate(low=Min("id"), high=Max("id"))
            if bounds["low"] is None:
                return Score.objects.none()
            scores = scores.filter(caption_id__gte=bounds["low"], caption_id__lte=bounds["high"])
            # The same bounds on the captions' side of the join: PostgreSQL carries equalities across
            # a join, not ranges, and would walk the captions from the table's first one.
            scores = scores.extra(where=[CAPTION_RANGE], params=[bounds["low"], bounds["high"]])
        return scores.select_related("caption__item", "caption__system", "metric_version__metric").only(
            *serializers.ScoreSerializer.READS
        )


@extend_schema_view(list=extend_schema(parameters=shapes.CORRELATION_PARAMETERS))
class CorrelationViewSet(viewsets.ReadOnlyModelViewSet):
    """Meta-evaluation cells; filter by `dataset`, `metric`, `protocol` (paper/canonical/live), `level`."""

    serializer_class = serializers.CorrelationSerializer

    def get_queryset(self):
        query = self.request.query_params
        results = (
            CorrelationResult.objects.filter(dataset__in=Dataset.objects.visible_to(self.request.user))
            .filter(metric_version__metric__in=Metric.objects.visible_to(self.request.user))
            .select_related("dataset", "metric_version__metric")
            .order_by("id")
        )
        if query.get("dataset"):
            results = results.filter(dataset__slug=query["dataset"])
        if query.get("metric"):
            results = results.filter(metric_version__metric__slug=query["metric"])
        if query.get("protocol"):
            results = results.filter(protocol_name=query["protocol"])
        if query.get("level"):
            results = results.filter(level=query["level"])
        return results
