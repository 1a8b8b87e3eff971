"""The OpenAPI schema says what the API answers: every operation is called on real rows, as the
caller it is meant for and as the callers it refuses, and every answer (status, content type,
headers, body) is checked against the schema by schemathesis. An operation the schema lists and
this file does not call fails the test, so schema and code cannot drift apart."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@dataclass
class Call:
    method: str
    path: str  # as the schema writes it
    status: int
    who: str = "anonymous"
    path_parameters: dict = field(default_factory=dict)
    query: dict = field(default_factory=dict)
    body: object = None
    media_type: str | None = None
    headers: dict = field(default_factory=dict)


def schema_and_app():
    import schemathesis
    from django.core.wsgi import get_wsgi_application

    raw = json.loads(Client().get("/api/v1/schema/", {"format": "json"}).content)
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = get_wsgi_application()
    return raw, schema


def test_the_schema_generates_without_warnings():
    """drf-spectacular's own check (`spectacular --validate --fail-on-warn`): a view whose shape it
    has to guess, or an OpenAPI document that does not validate, fails here."""
    from django.core.management import call_command

    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null", stdout=out, stderr=out)


def test_uploads_are_binary_multipart_and_writes_answer_their_own_shape():
    raw, _ = schema_and_app()
    paths, components = raw["paths"], raw["components"]["schemas"]

    def body_schema(path, content_type="multipart/form-data"):
        reference = paths[path]["post"]["requestBody"]["content"][content_type]["schema"]["$ref"]
        return components[reference.rsplit("/", 1)[-1]]

    assert body_schema("/api/v1/submissions/")["properties"]["results"] == {"type": "string", "format": "binary"}
    assert body_schema("/api/v1/datasets/")["properties"]["file"]["format"] == "binary"
    assert body_schema("/api/v1/metric-submissions/")["properties"]["scores"]["format"] == "binary"
    assert set(paths["/api/v1/submissions/"]["post"]["requestBody"]["content"]) == {"multipart/form-data"}
    created = paths["/api/v1/submissions/"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert created["$ref"].endswith("/Submission")  # the stored submission, not the request's form
    for path, operations in paths.items():
        for method, operation in operations.items():
            answers = operation["responses"]
            assert "429" in answers and "Retry-After" in answers["429"]["headers"], (method, path)
            if "{" in path:
                assert "404" in answers, (method, path)
            queried = any(p["in"] == "query" for p in operation.get("parameters", [])) and "schema" not in path
            if operation.get("requestBody") or queried:
                assert "400" in answers, (method, path)
    declared = {p["name"] for p in paths["/api/v1/scores/"]["get"]["parameters"]}
    assert {"dataset", "system", "metric", "cursor", "page_size"} <= declared
    declared = {p["name"] for p in paths["/api/v1/correlations/"]["get"]["parameters"]}
    assert {"dataset", "metric", "protocol", "level", "limit", "offset"} <= declared
    declared = {p["name"] for p in paths["/api/v1/leaderboards/{slug}/"]["get"]["parameters"]}
    assert {"sort", "order", "q", "only", "domain", "format"} <= declared
    declared = {p["name"] for p in paths["/api/v1/leaderboards/metrics/"]["get"]["parameters"]}
    assert {"protocol", "level", "family", "reference"} <= declared


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the WSGI handler closes the connection after each request
def test_every_answer_conforms_to_the_schema(
    fresh_page_memory, fresh_rate_limits, world, demo_pictures, django_user_model, settings
):
    from rest_framework.authtoken.models import Token
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    from catalog.models import Item, System
    from leaderboards.citable import snapshot_freeze
    from scoring.models import CorrelationResult, Score
    from workbench.services import MetricInfo, ScoresFile, metric_submit

    raw, schema = schema_and_app()
    dataset, public = world["dataset"], world["public"]
    staff = django_user_model.objects.create_user("curator", is_staff=True)
    tokens = {
        "member": Token.objects.create(user=world["user"]).key,
        "stranger": Token.objects.create(user=world["stranger"]).key,
        "staff": Token.objects.create(user=staff).key,
    }
    candidates = [
        json.loads(line) for line in Client().get(f"/api/v1/datasets/{dataset.slug}/candidates/").streaming_content
    ]
    scores = "".join(json.dumps({"caption_id": c["caption_id"], "score": 0.5}) + "\n" for c in candidates)
    # schemathesis names a file part after its field (no extension): CSV is what such a file is read as.
    scores_csv = "caption_id,score\n" + "".join(f"{c['caption_id']},0.25\n" for c in candidates)
    uploaded = metric_submit(
        owner=world["user"],
        info=MetricInfo("Mine", "", "", "", higher_is_better=True, reference_free=False),
        files=[ScoresFile(dataset, "scores.jsonl", io.BytesIO(scores.encode()))],
        is_public=False,
    )
    metric_submission = uploaded.submission_id
    score_id = Score.objects.filter(caption__system=public.system).values_list("pk", flat=True).first()
    correlation_id = CorrelationResult.objects.values_list("pk", flat=True).first()
    submission, system = public.pk, public.system_id
    own_system = System.objects.own().filter(dataset=dataset).values_list("slug", flat=True).first()
    frozen = snapshot_freeze(dataset=dataset, by="curator", note="for the schema").pk
    _campaigns(dataset, public.system, staff, world["stranger"])
    items = Item.objects.filter(dataset=dataset).order_by("id").values("external_id")
    results = "image_id,caption\n" + "".join(f"{i['external_id']},a new caption\n" for i in items)
    broken = b"image_id,caption\nno such image,x\n"
    canonical = "\n".join(
        json.dumps(row)
        for row in (
            {"type": "dataset", "format": "capbench-canonical", "format_version": 1, "slug": "tiny", "title": "Tiny",
             "source_format": "canonical", "modality": "image", "kind": "benchmark", "dimensions": [],
             "rating_scale": {}, "description": "", "citation": "", "licence": "", "url": "",
             "protocol_version": "1", "protocol_notes": ""},
            {"type": "item", "external_id": "dog.jpg", "media": None, "references": ["A dog."], "metadata": {}},
        )
    ).encode()  # fmt: skip

    def upload(content: bytes | str) -> dict:
        content = content.encode() if isinstance(content, str) else content
        return {"dataset": dataset.slug, "method_name": "Mine", "results": content}

    S, D = "/api/v1/submissions/", "/api/v1/datasets/"
    calls = [
        Call("post", "/api/v1/auth/token/", 200, body={"username": "captioner", "password": "a long test password"},
             media_type="application/x-www-form-urlencoded"),
        Call("post", "/api/v1/auth/token/", 400, body={"username": "captioner", "password": "wrong"},
             media_type="application/json"),
        Call("get", "/api/v1/campaigns/", 200, query={"limit": 5}),
        Call("get", "/api/v1/campaigns/", 400, query={"offset": "-1"}),
        Call("get", "/api/v1/campaigns/{slug}/", 200, path_parameters={"slug": "rated"}),
        Call("get", "/api/v1/campaigns/{slug}/", 200, "member", path_parameters={"slug": "duel"}),
        Call("get", "/api/v1/campaigns/{slug}/", 404, path_parameters={"slug": "no-such-campaign"}),
        Call("get", "/api/v1/cite/", 200),
        Call("get", "/api/v1/correlations/", 200, query={"dataset": dataset.slug, "level": "caption"}),
        Call("get", "/api/v1/correlations/", 400, query={"protocol": "\x00"}),
        Call("get", "/api/v1/correlations/{id}/", 200, path_parameters={"id": correlation_id}),
        Call("get", "/api/v1/correlations/{id}/", 404, path_parameters={"id": 10**9}),
        Call("get", D, 200, query={"limit": 2}),
        Call("get", D, 400, query={"offset": "-1"}),
        Call("post", D, 201, "staff", body={"file": canonical}, media_type="multipart/form-data"),
        Call("post", D, 200, "staff", body={"file": canonical}, media_type="multipart/form-data"),
        Call("post", D, 400, "staff", body={"file": b"{not json"}, media_type="multipart/form-data"),
        Call("post", D, 403, "member", body={"file": canonical}, media_type="multipart/form-data"),
        Call("get", D + "{slug}/", 200, path_parameters={"slug": dataset.slug}),
        Call("get", D + "{slug}/", 404, path_parameters={"slug": "no-such-dataset"}),
        Call("get", D + "{slug}/candidates/", 200, path_parameters={"slug": dataset.slug}, query={"format": "csv"}),
        Call("get", D + "{slug}/items/", 200, path_parameters={"slug": dataset.slug}, query={"limit": 3}),
        Call("get", D + "{slug}/references/", 200, path_parameters={"slug": dataset.slug}),
        Call("get", "/api/v1/leaderboards/{slug}/", 200, path_parameters={"slug": dataset.slug}),
        Call("get", "/api/v1/leaderboards/{slug}/", 200, path_parameters={"slug": dataset.slug},
             query={"format": "csv", "sort": "bleu_4", "order": "asc"}),
        Call("get", "/api/v1/leaderboards/{slug}/", 200, "member", path_parameters={"slug": dataset.slug},
             query={"only": "paper", "q": "cmd"}),
        Call("get", "/api/v1/leaderboards/{slug}/", 404, path_parameters={"slug": "no-such-dataset"}),
        Call("get", "/api/v1/leaderboards/{slug}/compare/", 200, path_parameters={"slug": dataset.slug},
             query={"a": public.system.slug, "b": own_system}),
        Call("get", "/api/v1/leaderboards/{slug}/compare/", 400, path_parameters={"slug": dataset.slug},
             query={"a": public.system.slug, "b": world["private"].system.slug}),
        Call("get", "/api/v1/leaderboards/metrics/", 200, query={"protocol": "paper", "level": "caption"}),
        Call("get", "/api/v1/leaderboards/metrics/", 200, "member", query={"reference": "based"}),
        Call("get", "/api/v1/leaderboards/metrics/", 404, query={"protocol": "mine"}),
        Call("get", "/api/v1/metric-submissions/", 200, "member"),
        Call("post", "/api/v1/metric-submissions/", 201, "member", media_type="multipart/form-data",
             body={"name": "Mine too", "dataset": dataset.slug, "scores": scores_csv.encode()}),
        Call("post", "/api/v1/metric-submissions/", 400, "member", media_type="multipart/form-data",
             body={"name": "Broken", "dataset": dataset.slug, "scores": b"caption_id,score\n-5,x\n"}),
        Call("post", "/api/v1/metric-submissions/", 401, media_type="multipart/form-data",
             body={"name": "Anonymous", "dataset": dataset.slug, "scores": scores_csv.encode()}),
        Call("get", "/api/v1/metric-submissions/{id}/", 200, "member", path_parameters={"id": metric_submission}),
        Call("get", "/api/v1/metric-submissions/{id}/", 404, "stranger", path_parameters={"id": metric_submission}),
        Call("post", "/api/v1/metric-submissions/{id}/visibility/", 200, "member",
             path_parameters={"id": metric_submission}, body={"public": True}, media_type="application/json"),
        Call("post", "/api/v1/metric-submissions/{id}/visibility/", 404, "stranger",
             path_parameters={"id": metric_submission}, body={"public": "true"},
             media_type="application/x-www-form-urlencoded"),
        Call("post", "/api/v1/metric-submissions/{id}/withdraw/", 200, "member",
             path_parameters={"id": metric_submission}),
        Call("get", "/api/v1/metrics/", 200, query={"limit": 5}),
        Call("get", "/api/v1/metrics/{slug}/", 200, path_parameters={"slug": "bleu_4"}),
        Call("get", "/api/v1/metrics/{slug}/", 401, path_parameters={"slug": "bleu_4"},
             headers={"Authorization": "Token not-a-token"}),
        Call("get", "/api/v1/schema/", 200, query={"format": "json"}),
        Call("get", "/api/v1/scores/", 200, query={"dataset": dataset.slug, "metric": "bleu_4", "page_size": 10}),
        Call("get", "/api/v1/scores/", 400, query={"system": "\x00"}),
        Call("get", "/api/v1/scores/{id}/", 200, path_parameters={"id": score_id}),
        Call("get", S, 200, "member"),
        Call("post", S, 201, "member", body=upload(results), media_type="multipart/form-data"),
        Call("post", S, 409, "member", body=upload(results), media_type="multipart/form-data"),
        Call("post", S, 400, "member", body=upload(broken), media_type="multipart/form-data"),
        Call("post", S, 401, body=upload(results), media_type="multipart/form-data"),
        Call("get", S + "{id}/", 200, path_parameters={"id": submission}),
        Call("get", S + "{id}/", 404, path_parameters={"id": world["private"].pk}),
        Call("get", S + "{id}/progress/", 200, "member", path_parameters={"id": submission}),
        Call("get", S + "{id}/results/", 200, path_parameters={"id": submission}),
        Call("get", S + "{id}/results/", 404, "member", path_parameters={"id": world["private"].pk}),
        Call("get", "/api/v1/snapshots/", 200, query={"board": "captioner", "dataset": dataset.slug}),
        Call("get", "/api/v1/snapshots/{id}/", 200, path_parameters={"id": frozen}),
        Call("get", "/api/v1/snapshots/{id}/", 404, path_parameters={"id": frozen + 1000}),
        Call("get", "/api/v1/systems/", 200, query={"dataset__slug": dataset.slug}),
        Call("get", "/api/v1/systems/{id}/", 200, path_parameters={"id": system}),
    ]  # fmt: skip
    failures, exercised = [], set()
    checks = [
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
    ]
    for call in calls:
        case = schema[call.path][call.method.upper()].Case(
            path_parameters=call.path_parameters,
            query=call.query,
            body=call.body if call.body is not None else _not_set(),
            media_type=call.media_type,
        )
        headers = dict(call.headers)
        if call.who in tokens:
            headers["Authorization"] = f"Token {tokens[call.who]}"
        response = case.call(headers=headers, environ_base={"REMOTE_ADDR": "127.0.0.1"})
        where = f"{call.method.upper()} {call.path} {call.path_parameters or ''}{call.query or ''} as {call.who}"
        if response.status_code != call.status:
            failures.append(f"{where}: {response.status_code} (expected {call.status}): {response.text[:300]}")
            continue
        try:
            case.validate_response(response, checks=checks)
        except BaseExceptionGroup as error:  # schemathesis raises a group of every failed check
            failures.append(f"{where}: {error}")
        exercised.add((call.method, call.path, call.status))

    # 429 with Retry-After, as the schema says every operation may answer.
    settings.CAPBENCH_RATES["api_anon"] = "1/min"
    limited = [
        schema["/api/v1/datasets/"]["GET"].Case().call(environ_base={"REMOTE_ADDR": "10.9.9.9"}) for _ in range(2)
    ]
    assert limited[1].status_code == 429
    assert limited[1].headers["retry-after"][0].isdigit()
    schema["/api/v1/datasets/"]["GET"].Case().validate_response(limited[1], checks=checks)
    exercised.add(("get", "/api/v1/datasets/", 429))

    assert not failures, "\n\n".join(failures)
    operations = {(method, path) for path, ops in raw["paths"].items() for method in ops}
    assert operations == {(m, p) for m, p, _ in exercised}, "operations the schema lists and this test does not call"
    assert {200, 201, 400, 401, 403, 404, 409, 429} <= {status for _, _, status in exercised}


def _campaigns(dataset, system, staff, stranger) -> None:
    """A rating campaign and an arena, each answered by two people, its results computed, then closed."""
    from campaigns.models import Campaign
    from campaigns.rubrics import ACCR
    from campaigns.services.answers import annotation_answer
    from campaigns.services.assignment import task_next
    from campaigns.services.results import campaign_refresh
    from catalog.models import System

    rated = Campaign.objects.create(
        dataset=dataset, slug="rated", title="Rated", rubric=[d.as_json() for d in ACCR], gold_rate=0, created_by=staff
    )
    duel = Campaign.objects.create(
        dataset=dataset, slug="duel", title="Duel", mode="arena", gold_rate=0, created_by=staff
    )
    rated.systems.set([system])
    duel.systems.set([system, System.objects.filter(dataset=dataset, kind="human").order_by("id").first()])
    for campaign in (rated, duel):
        for n in range(8):
            for user in (staff, stranger):
                task = task_next(campaign=campaign, annotator=user)
                if campaign.is_arena:
                    annotation_answer(annotation_id=task.pk, annotator=user, winner=("left", "right", "tie")[n % 3])
                else:
                    values = {d.key: 1 + (n + task.item_id) % 5 for d in ACCR}
                    annotation_answer(annotation_id=task.pk, annotator=user, values=values)
        campaign_refresh(campaign_id=campaign.pk)
    # Closed: while open, their systems' captions and scores are blind (docs/human-evaluation.md), and
    # the per-caption calls above read the public system's.
    Campaign.objects.filter(pk__in=[rated.pk, duel.pk]).update(status=Campaign.Status.CLOSED)


def _not_set():
    from schemathesis.core import NOT_SET

    return NOT_SET
