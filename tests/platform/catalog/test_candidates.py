"""Candidates to score (docs/datasets.md §5): a meta-evaluation dataset's own captions with stable
ids, as JSONL or CSV, from the command, the page and the API, through the visibility rule."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command

from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, Item, Judgment, System
from catalog.services.candidates import (
    CSV_COLUMNS,
    candidate_rows,
    caption_key,
    caption_keys,
    is_meta_evaluation,
)
from catalog.services.imports import dataset_import
from tests.platform.factories import CaptionFactory, DatasetFactory, ItemFactory, UserFactory, submit

pytestmark = pytest.mark.django_db


def body(response) -> str:
    return b"".join(response.streaming_content).decode()


def import_demo(repo_root) -> Dataset:
    bundle = read_bundle("flickr8k-expert", repo_root / "demo" / "flickr8k-expert")
    return dataset_import(bundle=bundle, source_path="demo", slug="demo", title="Demo").dataset


def test_the_key_is_made_from_the_three_source_ids():
    expected = "c" + hashlib.sha256(b"1000268201_693b08cb0e.jpg\x1fhuman\x1f#3").hexdigest()[:16]
    assert caption_key("1000268201_693b08cb0e.jpg", "human", "#3") == expected
    assert len(expected) == 17
    assert caption_key("a", "b", "c") != caption_key("a", "bc", "")


def test_keys_survive_a_reimport_of_the_same_content(repo_root):
    demo = import_demo(repo_root)
    assert is_meta_evaluation(demo)
    keys = caption_keys(demo)
    rows = list(candidate_rows(demo))
    assert len(keys) == len(rows) == Caption.objects.filter(item__dataset=demo).count() > 0
    assert {row.caption_id for row in rows} == set(keys)
    texts = {key: Caption.objects.get(pk=pk).text for key, pk in keys.items()}
    assert all(texts[row.caption_id] == row.candidate for row in rows)

    Dataset.objects.filter(pk=demo.pk).delete()
    again = import_demo(repo_root)
    new_keys = caption_keys(again)
    assert set(new_keys) == set(keys)
    assert set(new_keys.values()).isdisjoint(keys.values())  # new pks, same ids
    assert [row.caption_id for row in candidate_rows(again)] == [row.caption_id for row in rows]
    assert {key: Caption.objects.get(pk=pk).text for key, pk in new_keys.items()} == texts


def test_rows_are_ordered_and_carry_references_and_image(repo_root):
    demo = import_demo(repo_root)
    rows = list(candidate_rows(demo))
    assert [(r.item, r.system) for r in rows] == sorted((r.item, r.system) for r in rows)
    item = Item.objects.select_related("media").get(dataset=demo, external_id=rows[0].item)
    assert rows[0].references == item.references
    assert len(rows[0].references) > 0
    assert rows[0].image == item.media.name
    Item.objects.filter(pk=item.pk).update(media=None)
    assert next(candidate_rows(demo)).image == item.external_id  # no media: the item's own id


@pytest.mark.parametrize("format", ["jsonl", "csv"])
def test_downloads_round_trip_and_equal_the_command(client, repo_root, tmp_path, format):
    demo = import_demo(repo_root)
    # A candidate with a quote, a comma, a newline and non-ASCII text, written back exactly.
    first = Caption.objects.own().filter(item__dataset=demo).order_by("item__external_id", "system__slug").first()
    Caption.objects.filter(pk=first.pk).update(text='a "café", with\na newline')
    expected = [row.as_dict() for row in candidate_rows(demo)]
    assert expected[0]["candidate"] == 'a "café", with\na newline'

    response = client.get(f"/datasets/demo/candidates.{format}")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="demo-candidates.{format}"'
    text = body(response)
    if format == "jsonl":
        assert response["Content-Type"].startswith("application/x-ndjson")
        read = [json.loads(line) for line in text.splitlines()]
        assert [list(line) for line in read] == [list(CSV_COLUMNS)] * len(read)  # keys in order
    else:
        assert response["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(text, newline="")))
        assert rows[0] == CSV_COLUMNS
        read = [dict(zip(CSV_COLUMNS, row, strict=True)) | {"references": json.loads(row[2])} for row in rows[1:]]
    assert read == expected

    printed = io.StringIO()
    call_command("datasets", "candidates", "demo", "--format", format, stdout=printed)
    assert printed.getvalue() == text
    path = tmp_path / f"out.{format}"  # the format from the file's extension
    call_command("datasets", "candidates", "demo", "-o", str(path), stderr=io.StringIO())
    assert path.read_bytes().decode() == text

    api = client.get(f"/api/v1/datasets/demo/candidates/?format={format}")
    assert api.status_code == 200
    assert body(api) == text
    if format == "jsonl":  # the default, also for a client that asks for JSON
        assert body(client.get("/api/v1/datasets/demo/candidates/", HTTP_ACCEPT="application/json")) == text
    assert api["Content-Disposition"] == f'attachment; filename="demo-candidates.{format}"'


def test_a_formula_is_defused_in_csv_only(client, repo_root):
    demo = import_demo(repo_root)
    Caption.objects.filter(pk=Caption.objects.filter(item__dataset=demo).order_by("pk").first().pk).update(
        text="=HYPERLINK(1)"
    )
    assert "'=HYPERLINK(1)" in body(client.get("/datasets/demo/candidates.csv"))
    assert '"candidate": "=HYPERLINK(1)"' in body(client.get("/datasets/demo/candidates.jsonl"))


def test_submissions_captions_are_never_offered(client, repo_root, django_user_model):
    demo = import_demo(repo_root)
    owner = UserFactory(username="owner")
    submit(owner, demo, "private one", caption="a dog private one", public=False)
    submit(owner, demo, "public one", caption="a dog public one")
    own = Caption.objects.own().filter(item__dataset=demo).count()
    assert Caption.objects.filter(item__dataset=demo).count() == own + 2 * Item.objects.filter(dataset=demo).count()
    assert len(caption_keys(demo)) == own

    anonymous = body(client.get("/datasets/demo/candidates.jsonl"))
    client.force_login(owner)
    for text in (
        anonymous,
        body(client.get("/datasets/demo/candidates.jsonl")),
        body(client.get("/datasets/demo/candidates.csv")),
        body(client.get("/api/v1/datasets/demo/candidates/")),
    ):
        assert "a dog private one" not in text
        assert "a dog public one" not in text
    assert len(anonymous.splitlines()) == own
    submitted = System.objects.filter(dataset=demo, submission__isnull=False).values_list("slug", flat=True)
    assert not any(f'"system": "{slug}"' in anonymous for slug in submitted)


def test_a_dataset_without_judgments_is_refused(client, repo_root):
    import_demo(repo_root)
    plain = DatasetFactory(slug="plain")
    CaptionFactory(item=ItemFactory(dataset=plain, references=["a cat"]), text="a dog")
    assert not is_meta_evaluation(plain)
    with pytest.raises(CommandError, match="'plain' is not a meta-evaluation dataset"):
        call_command("datasets", "candidates", "plain")
    with pytest.raises(CommandError, match=r"no dataset 'nope' \(stored: demo, plain\)"):
        call_command("datasets", "candidates", "nope")
    assert client.get("/datasets/plain/candidates.jsonl").status_code == 404
    assert client.get("/api/v1/datasets/plain/candidates/").status_code == 404
    assert "Score these candidates" not in client.get("/datasets/plain/").content.decode()
    page = client.get("/datasets/demo/").content.decode()
    assert 'href="/datasets/demo/candidates.jsonl"' in page
    assert 'href="/datasets/demo/candidates.csv"' in page


def test_a_pairwise_dataset_is_a_meta_evaluation_dataset(repo_root):
    demo = import_demo(repo_root)
    Judgment.objects.filter(caption__item__dataset=demo).delete()
    assert not is_meta_evaluation(demo)
    from catalog.models import PairJudgment

    a, b = Caption.objects.filter(item__dataset=demo)[:2]
    PairJudgment.objects.create(dataset=demo, item=a.item, external_id="p1", caption_a=a, caption_b=b, winner="a")
    assert is_meta_evaluation(demo)


def test_a_hidden_dataset_is_404(client, repo_root, django_user_model):
    demo = import_demo(repo_root)
    Dataset.objects.filter(pk=demo.pk).update(is_public=False)
    client.force_login(UserFactory(username="someone"))
    assert client.get("/datasets/demo/candidates.jsonl").status_code == 404
    assert client.get("/datasets/demo/candidates.csv").status_code == 404
    assert client.get("/api/v1/datasets/demo/candidates/?format=csv").status_code == 404


def test_downloads_are_rate_limited(fresh_rate_limits, client, repo_root, settings):
    import_demo(repo_root)
    settings.CAPBENCH_RATES["pages_anon"] = "2/min"
    settings.CAPBENCH_RATES["api_anon"] = "2/min"
    codes = [client.get("/datasets/demo/candidates.jsonl").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    codes = [client.get("/api/v1/datasets/demo/candidates/?format=csv").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    refused = client.get("/api/v1/datasets/demo/candidates/")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0


def test_the_schema_documents_the_download(client, db):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/datasets/{slug}/candidates/"]["get"]
    assert set(operation["responses"]["200"]["content"]) == {"application/x-ndjson", "text/csv"}
    assert any(p["name"] == "format" and set(p["schema"]["enum"]) == {"jsonl", "csv"} for p in operation["parameters"])
