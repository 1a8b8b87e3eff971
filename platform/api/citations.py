"""How to cite CapBench, for programs: `GET /api/v1/cite/` gives its BibTeX entry (the /cite.bib
download's text). Datasets' and metrics' entries are their serializers' `bibtex` field."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog.citations import capbench_bibtex


class CiteView(APIView):
    """CapBench's own BibTeX entry: `{"bibtex": "@misc{capbench, …}"}`."""

    @extend_schema(
        responses=inline_serializer("Citation", fields={"bibtex": serializers.CharField(help_text="a BibTeX entry")})
    )
    def get(self, request: Request) -> Response:
        return Response({"bibtex": capbench_bibtex()})
