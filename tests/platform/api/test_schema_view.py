"""The schema's view (api/documentation/view.py) draws the OpenAPI document once per process for
each language asked, answers the same document every time, in YAML and in JSON, and keeps at most
KEPT drawings whatever `?lang=` a requester sends."""

import json

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from api.documentation import view

pytestmark = pytest.mark.django_db


@pytest.fixture
def drawings(monkeypatch):
    """The view's memory emptied, and the number of times the generator drew the schema."""
    monkeypatch.setattr(view, "_drawn", type(view._drawn)())
    drawn = []
    draw = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):
        drawn.append(self.api_version)
        return draw(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    return drawn


def test_the_schema_is_drawn_once_and_answered_the_same_every_time(drawings):
    client = Client()
    first = client.get("/api/v1/schema/", {"format": "json"})
    again = client.get("/api/v1/schema/", {"format": "json"})
    yaml = client.get("/api/v1/schema/")
    assert first.status_code == again.status_code == yaml.status_code == 200
    assert again.content == first.content
    assert json.loads(first.content)["paths"]["/api/v1/leaderboards/{slug}/"]
    assert b"/api/v1/leaderboards/{slug}/:" in yaml.content
    assert yaml["Content-Disposition"].endswith('.yaml"')
    assert first["Content-Disposition"].endswith('.json"')
    assert len(drawings) == 1


def test_languages_asked_for_are_kept_up_to_a_bound(drawings, monkeypatch):
    monkeypatch.setattr(view, "KEPT", 2)
    client = Client()

    def ask(language):
        assert client.get("/api/v1/schema/", {"format": "json", "lang": language}).status_code == 200

    for language in ("x1", "x2", "x3"):
        ask(language)
    assert len(view._drawn) == 2
    assert len(drawings) == 3
    ask("x3")
    ask("x2")
    assert len(drawings) == 3  # the two latest are kept
    ask("x1")
    assert len(drawings) == 4  # the oldest was forgotten
