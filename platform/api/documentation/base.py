"""The base of the schema-only shapes, and a number as the API gives it everywhere."""

from __future__ import annotations

from rest_framework import serializers


class Schema(serializers.Serializer):
    """A shape for the schema only: never used to read or write data."""

    def create(self, validated_data):  # pragma: no cover - never called
        raise NotImplementedError

    def update(self, instance, validated_data):  # pragma: no cover - never called
        raise NotImplementedError


class Number(Schema):
    """A number as the API gives it everywhere (docs/api.md "Numbers"): native and in points."""

    value = serializers.FloatField(allow_null=True, help_text="on the metric's own scale (0–1 metrics as 0–1)")
    low = serializers.FloatField(allow_null=True, help_text="the 95% interval's lower end, on the same scale")
    high = serializers.FloatField(allow_null=True)
    points = serializers.FloatField(allow_null=True, help_text="the value as pages show it (× the metric's points)")
    low_points = serializers.FloatField(allow_null=True)
    high_points = serializers.FloatField(allow_null=True)
