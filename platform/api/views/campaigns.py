"""Live human evaluation over the API: campaigns and their results, as far as the caller may see them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api import campaign_serializers as serializers
from api import documentation as shapes
from campaigns.selectors import campaigns_visible
from campaigns.services.identity import resemblance_named
from catalog.visibility import is_staff


class CampaignViewSet(viewsets.ReadOnlyModelViewSet):
    """Live human evaluation: rating campaigns and arenas on the datasets the caller may see, each
    with its systems the caller may see; one campaign's results besides (agreement, the people
    column per system, annotator quality under pseudonyms, the Bradley–Terry fit), and for staff the
    annotators who answer alike."""

    serializer_class = serializers.CampaignSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return campaigns_visible(self.request.user).order_by("-created_at", "-id")

    @extend_schema(summary="A campaign and its results", responses=shapes.CampaignDetail)
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        campaign = self.get_object()
        results = serializers.campaign_results_json(campaign, request.user)
        # Annotators who answer alike (campaigns.services.identity): the organisers' (staff), never public.
        alike = [found.json() for found in resemblance_named(campaign)] if is_staff(request.user) else None
        return Response({**self.get_serializer(campaign).data, "results": results, "resemblance": alike})
