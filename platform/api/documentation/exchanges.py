"""Sign-in, uploads and publishing (what is sent, and the plain answer), and a page of a dataset's items."""

from __future__ import annotations

from rest_framework import serializers

from api.documentation.base import Schema
from api.serializers import DatasetSerializer, ItemSerializer


class Token(Schema):
    token = serializers.CharField(help_text="send as `Authorization: Token <token>`")


class Credentials(Schema):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class DuplicateSubmission(Schema):
    detail = serializers.CharField()
    submission = serializers.IntegerField(help_text="the earlier submission of the same file")
    url = serializers.URLField(help_text="its API URL")
    page = serializers.URLField(help_text="its page")


class Visibility(Schema):
    public = serializers.BooleanField(help_text="publish (true) or make private again (false)")


class DatasetUpload(Schema):
    file = serializers.FileField(help_text="a canonical JSONL file (docs/canonical-format.md)")
    slug = serializers.SlugField(required=False, help_text="the dataset's slug (default: the file's)")
    title = serializers.CharField(required=False, help_text="its title (default: the file's)")


class DatasetImported(DatasetSerializer):
    changed = serializers.BooleanField(help_text="false: the file equals what is stored (200, nothing written)")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="rows stored, per kind")

    class Meta(DatasetSerializer.Meta):
        fields = [*DatasetSerializer.Meta.fields, "changed", "counts"]


class ItemPage(Schema):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ItemSerializer(many=True)
