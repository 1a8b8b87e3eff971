"""Citations through the API: a `bibtex` string on datasets and metrics (the .bib downloads' text,
typed as a string in the schema) and CapBench's own entry at /api/v1/cite/."""

from __future__ import annotations

import json

import pytest

from scoring.services.metrics import metrics_sync
from tests.platform.plumbing.bibcheck import parse_bib

pytestmark = pytest.mark.django_db


def test_datasets_and_metrics_carry_the_bib_text(client, demo_dataset):
    metrics_sync()
    dataset = client.get(f"/api/v1/datasets/{demo_dataset.slug}/").json()
    assert dataset["bibtex"] == client.get(f"/datasets/{demo_dataset.slug}/cite.bib").content.decode()
    listed = client.get("/api/v1/datasets/").json()
    assert all(row["bibtex"].startswith("@") for row in listed["results"])
    metric = client.get("/api/v1/metrics/bleu_4/").json()
    assert metric["bibtex"] == client.get("/metrics/bleu_4/cite.bib").content.decode()
    assert parse_bib(metric["bibtex"])[0][1] == "papineni2002bleu"


def test_capbench_cite_endpoint(client):
    response = client.get("/api/v1/cite/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"bibtex"}
    assert body["bibtex"] == client.get("/cite.bib").content.decode()
    assert parse_bib(body["bibtex"])[0][:2] == ("misc", "capbench")


def test_the_schema_types_bibtex_as_a_string(client):
    schema = json.loads(client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").content)
    components = schema["components"]["schemas"]
    assert components["Dataset"]["properties"]["bibtex"]["type"] == "string"
    assert components["Metric"]["properties"]["bibtex"]["type"] == "string"
    assert components["Dataset"]["properties"]["bibtex"]["readOnly"] is True
    assert "/api/v1/cite/" in schema["paths"]
