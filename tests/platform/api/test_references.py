"""`GET /api/v1/datasets/SLUG/references/`: a dataset's items in the board's order with their
references, for scoring on one's own machine (`capbench eval`); a hidden test set's references are
staff's only, a dataset no one may see is a 404, and the download counts against the API's limits."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from catalog.models import Dataset, Item
from tests.platform.factories import UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/datasets/{}/references/"


def rows(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def as_user(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_every_item_in_primary_key_order_with_its_id_image_position_and_references(demo_dataset):
    items = list(Item.objects.filter(dataset=demo_dataset).select_related("media").order_by("pk"))
    response = APIClient().get(URL.format("demo"))
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert 'filename="demo-references.jsonl"' in response["Content-Disposition"]
    found = rows(response)
    assert [row["item"] for row in found] == [item.external_id for item in items]
    assert [row["position"] for row in found] == list(range(len(items)))
    assert [row["image"] for row in found] == [item.media.name if item.media else None for item in items]
    assert [row["references"] for row in found] == [item.references for item in items]
    assert all(len(row["references"]) >= 1 for row in found)  # the demo's images each have references


def test_a_hidden_test_set_gives_ids_and_order_but_its_references_to_staff_only(demo_dataset):
    Dataset.objects.filter(pk=demo_dataset.pk).update(references_hidden=True)
    first = Item.objects.filter(dataset=demo_dataset).order_by("pk").first()
    Item.objects.filter(pk=first.pk).update(references=["a qzhiddenref reference"])
    anonymous = APIClient().get(URL.format("demo"))
    member = as_user(UserFactory(username="member")).get(URL.format("demo"))
    staff = as_user(UserFactory(username="curator", is_staff=True)).get(URL.format("demo"))
    for response in (anonymous, member):
        found = rows(response)
        assert found[0]["item"] == first.external_id
        assert {row["references"] is None for row in found} == {True}
    assert rows(staff)[0]["references"] == ["a qzhiddenref reference"]
    assert "Authorization" in anonymous["Vary"]  # a cache keeps staff's answer apart


def test_a_dataset_no_one_may_see_and_a_missing_one_answer_404(demo_dataset):
    Dataset.objects.filter(pk=demo_dataset.pk).update(is_public=False)
    hidden = APIClient().get(URL.format("demo"))
    missing = APIClient().get(URL.format("no-such-dataset"))
    assert hidden.status_code == missing.status_code == 404
    assert json.loads(hidden.content) == json.loads(missing.content)  # the same words: nothing told


def test_the_download_counts_against_the_apis_rate(fresh_rate_limits, settings, demo_dataset):
    settings.CAPBENCH_RATES["api_anon"] = "2/min"
    client = APIClient(REMOTE_ADDR="10.7.7.7")
    answers = [client.get(URL.format("demo")) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert int(answers[2]["Retry-After"]) > 0


def test_the_schema_lists_it_as_a_json_lines_download():
    schema = APIClient().get("/api/v1/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/datasets/{slug}/references/"]["get"]
    assert "application/x-ndjson" in operation["responses"]["200"]["content"]
    assert "429" in operation["responses"]
