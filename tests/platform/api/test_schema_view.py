"""The schema's view (api/documentation/view.py) draws the OpenAPI document once per process and
answers the same document every time, in YAML and in JSON, whatever `?lang=` or `?version=` a
requester sends; it keeps at most KEPT drawings and forgets them when a setting changes, and keeps
none of a schema drawn for who asks (serve_public=False)."""

import json

import pytest
from django.test import Client, RequestFactory, override_settings
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


def test_a_language_or_version_asked_for_changes_nothing(drawings):
    client = Client()
    plain = client.get("/api/v1/schema/", {"format": "json"})
    for query in ({"lang": "de"}, {"lang": "x1"}, {"lang": "fr"}, {"version": "\n"}, {"version": "2"}):
        answer = client.get("/api/v1/schema/", {"format": "json", **query})
        assert answer.status_code == 200, query
        assert answer.content == plain.content, query
        assert answer["Content-Disposition"] == plain["Content-Disposition"], query
    assert len(drawings) == 1


def test_drawings_are_kept_up_to_a_bound_and_forgotten_when_a_setting_changes(drawings, monkeypatch):
    monkeypatch.setattr(view, "KEPT", 2)
    request = RequestFactory().get("/api/v1/schema/", {"format": "json"})

    def ask(title):  # a view of other settings keeps a drawing of its own
        answer = view.SchemaView.as_view(custom_settings={"TITLE": title})(request)
        assert answer.status_code == 200
        assert answer.data["info"]["title"] == title

    for title in ("one", "two", "three"):
        ask(title)
    assert len(view._drawn) == 2
    assert len(drawings) == 3
    ask("three")
    ask("two")
    assert len(drawings) == 3  # the two latest are kept
    ask("one")
    assert len(drawings) == 4  # the oldest was forgotten
    with override_settings(LANGUAGE_CODE="en-gb"):
        assert not view._drawn
        ask("one")
    assert len(drawings) == 5


def test_a_schema_drawn_for_who_asks_is_never_kept(drawings):
    request = RequestFactory().get("/api/v1/schema/", {"format": "json"})
    own = view.SchemaView.as_view(serve_public=False)
    assert own(request).status_code == 200
    assert own(request).status_code == 200
    assert len(drawings) == 2
    assert not view._drawn
