"""A metric's scores uploaded instead of its code: stored as a metric version like any other, so the
correlations, intervals and clusters are the engine's own. A built-in metric's own scores, uploaded,
reproduce its numbers and clusters exactly; a noisy copy lands below it; bad files are refused with
every problem located and nothing stored; a private metric is its owner's alone."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

from catalog.services.candidates import caption_keys
from catalog.uploads.services import upload_visibility_set, upload_withdraw
from scoring.models import CorrelationResult, Metric, MetricVersion, Score, SignificanceResult
from scoring.services.planning import dataset_plan
from tests.platform.factories import UserFactory
from tests.platform.scoring.inline import run_jobs
from tests.worlds import kept, metric_registry
from workbench.models import MetricSubmission, MetricUpload, UploadedFile
from workbench.services import (
    METRICS,
    MetricInfo,
    MetricRefused,
    ScoresFile,
    ScoresRefused,
    metric_submit,
    upload_correlate,
)

pytestmark = [pytest.mark.django_db(transaction=True)]
BUILT_IN = ["bleu_4", "cider_d", "rouge_l"]


@pytest.fixture
def scored(demo_dataset):
    """The demo dataset scored by three built-in metrics, their correlations and clusters computed
    (once per test process, copied back after: tests/worlds.py)."""

    def built():
        run_jobs(dataset_plan(dataset=demo_dataset, slugs=BUILT_IN))
        return demo_dataset

    return kept("demo scored by three metrics", built, inputs=metric_registry())


def builtin_scores(dataset, slug: str) -> dict[str, float]:
    """The built-in metric's stored scores under the candidates' ids, as a researcher would upload them."""
    metric = Metric.objects.get(slug=slug)
    by_pk = dict(Score.objects.filter(metric_version=metric.current_version).values_list("caption_id", "value"))
    return {key: by_pk[pk] for key, pk in caption_keys(dataset).items()}


def jsonl(scores: dict[str, float]) -> bytes:
    return "\n".join(json.dumps({"caption_id": key, "score": value}) for key, value in scores.items()).encode()


def submit(owner, dataset, content: bytes, *, name="Copy", file_name="scores.jsonl", **kwargs):
    upload = metric_submit(
        owner=owner,
        info=MetricInfo(name, kwargs.pop("description", ""), higher_is_better=kwargs.pop("higher_is_better", True)),
        files=[ScoresFile(dataset, file_name, content)],
        **kwargs,
    )
    return upload_correlate(upload_id=upload.pk)  # what the task does (a worker's test is below)


def cells(slug: str) -> dict[tuple, CorrelationResult]:
    found = CorrelationResult.objects.filter(metric_version__metric__slug=slug)
    return {(r.protocol, r.level, r.dimension, r.statistic): r for r in found}


def public_ranks() -> dict[tuple, dict[str, int]]:
    return {
        (r.protocol, r.dimension, r.statistic): dict(zip(r.metrics, r.ranks, strict=True))
        for r in SignificanceResult.objects.filter(subject__isnull=True)
    }


def test_a_built_in_metrics_own_scores_reproduce_its_correlations_and_clusters(scored, captioner):
    before = public_ranks()
    upload = submit(captioner, scored, jsonl(builtin_scores(scored, "cider_d")), is_public=True)
    assert upload.status == MetricUpload.Status.DONE
    slug = upload.metric_version.metric.slug
    mine, theirs = cells(slug), cells("cider_d")
    assert mine.keys() == theirs.keys()
    assert len(mine) >= 4
    for key, result in theirs.items():
        copy = mine[key]
        assert (copy.value, copy.low, copy.high, copy.n, copy.left_out) == (
            result.value,
            result.low,
            result.high,
            result.n,
            result.left_out,
        ), key
        if result.level == "caption":
            assert bytes(copy.draws.values) == bytes(result.draws.values)  # the same resamples
    after = public_ranks()
    assert after.keys() == before.keys()
    for column, ranks in after.items():
        assert ranks[slug] == ranks["cider_d"], column
        assert {m: r for m, r in ranks.items() if m != slug} == before[column], column  # nobody else moved
    print("reproduced:", {k[3]: round(100 * v.value, 2) for k, v in theirs.items() if k[1] == "caption"})


def test_a_noisy_copy_lands_below_in_a_lower_cluster(scored, captioner):
    clean = builtin_scores(scored, "cider_d")
    spread = float(np.std(list(clean.values())))
    noise = np.random.default_rng(7).normal(0.0, 3 * spread, len(clean))
    noisy = {key: value + float(shift) for (key, value), shift in zip(clean.items(), noise, strict=True)}
    upload = submit(captioner, scored, jsonl(noisy), name="Noisy", is_public=True)
    slug = upload.metric_version.metric.slug
    key = ("flickr8k-expert/paper@1", "caption", "overall", "tau_c")
    assert cells(slug)[key].value < cells("cider_d")[key].value
    ranks = public_ranks()[("flickr8k-expert/paper@1", "overall", "tau_c")]
    assert ranks[slug] > ranks["cider_d"]
    print("noisy:", round(100 * cells(slug)[key].value, 2), "cider_d:", round(100 * cells("cider_d")[key].value, 2))


def test_lower_is_better_is_read_the_other_way(scored, captioner):
    flipped = {key: -value for key, value in builtin_scores(scored, "cider_d").items()}
    upload = submit(captioner, scored, jsonl(flipped), name="Distance", higher_is_better=False)
    key = ("flickr8k-expert/paper@1", "caption", "overall", "tau_b")
    assert cells(upload.metric_version.metric.slug)[key].value == cells("cider_d")[key].value


def counts() -> tuple:
    return (
        Metric.objects.count(),
        MetricVersion.objects.count(),
        Score.objects.count(),
        MetricSubmission.objects.count(),
        MetricUpload.objects.count(),
        UploadedFile.objects.count(),
    )


def test_bad_files_of_every_kind_are_refused_with_their_place_and_nothing_stored(demo_dataset, captioner, settings):
    keys = list(caption_keys(demo_dataset))
    good = [json.dumps({"caption_id": key, "score": 0.5}) for key in keys]
    cases = {
        "invalid JSON": ([*good[:3], "{oops", *good[3:]], "line 4, column 2: invalid JSON"),
        "no score": (
            [*good[:1], json.dumps({"caption_id": keys[1]}), *good[2:]],
            "line 2, field 'score': expected a number, got nothing",
        ),
        "text score": (
            [*good[:1], json.dumps({"caption_id": keys[1], "score": "high"}), *good[2:]],
            "line 2, field 'score': expected a number, got \"high\"",
        ),
        "NaN": (
            [*good[:2], f'{{"caption_id": "{keys[2]}", "score": NaN}}', *good[3:]],
            "line 3, field 'score': NaN is not a finite number",
        ),
        "infinity": (
            [*good[:2], f'{{"caption_id": "{keys[2]}", "score": 1e999}}', *good[3:]],
            "line 3, field 'score': Infinity is not a finite number",
        ),
        "boolean": (
            [json.dumps({"caption_id": keys[0], "score": True}), *good[1:]],
            "line 1, field 'score': expected a number, got true",
        ),
        "no id": (
            [json.dumps({"score": 1}), *good[1:]],
            "line 1, field 'caption_id': expected the id from the candidates file, got nothing",
        ),
        "unknown id": (
            [*good, json.dumps({"caption_id": "cdeadbeef", "score": 1})],
            f"line {len(good) + 1}, field 'caption_id': 'cdeadbeef' is not a candidate",
        ),
        "duplicate id": (
            [*good, good[5]],
            f"line {len(good) + 1}, field 'caption_id': {keys[5]} again (first on line 6)",
        ),
        "not an object": (
            [*good[:1], "[1, 2]", *good[2:]],
            "line 2: expected an object with caption_id and score, got list",
        ),
        "coverage": (
            good[: len(good) // 2],
            f"{len(good) - len(good) // 2:,} of the dataset's {len(good):,} candidates have no score",
        ),
        "empty": ([""], "the file has no scores"),
    }
    before = counts()
    for name, (lines, expected) in cases.items():
        with pytest.raises(ScoresRefused) as refused:
            submit(captioner, demo_dataset, "\n".join(lines).encode())
        assert any(expected in problem for problem in refused.value.problems), (name, refused.value.problems)
        assert all(problem.startswith("scores.jsonl (demo): ") for problem in refused.value.problems)
        assert counts() == before, name
    with pytest.raises(ScoresRefused, match=r"line 1: not valid UTF-8"):
        submit(captioner, demo_dataset, b"\xff\xfe" + "\n".join(good).encode())
    csv_missing = "caption_id,value\n" + "\n".join(f"{key},1" for key in keys)
    with pytest.raises(ScoresRefused, match="the CSV header needs the columns caption_id and score; missing score"):
        submit(captioner, demo_dataset, csv_missing.encode(), file_name="scores.csv")
    settings.CAPBENCH_SUBMISSION_MAX_BYTES = 100
    with pytest.raises(ScoresRefused, match="more than the limit of 100"):
        submit(captioner, demo_dataset, "\n".join(good).encode())
    assert counts() == before


def test_a_few_missing_ids_are_allowed_and_shown(demo_dataset, captioner, settings):
    keys = list(caption_keys(demo_dataset))
    settings.CAPBENCH_METRIC_MIN_COVERAGE = 0.9
    kept = keys[: int(len(keys) * 0.95)]
    csv_text = "caption_id,score\n" + "\n".join(f"{key},{i % 7}" for i, key in enumerate(kept))
    upload = submit(captioner, demo_dataset, csv_text.encode(), file_name="scores.csv")
    uploaded = upload.files.get()
    assert (uploaded.scored, uploaded.candidates, uploaded.missing) == (len(kept), len(keys), len(keys) - len(kept))
    result = CorrelationResult.objects.filter(metric_version=upload.metric_version, statistic="tau_c").first()
    assert result is not None and result.left_out > 0  # left out, and said so


def test_metadata_refusals(demo_dataset, captioner):
    content = jsonl(dict.fromkeys(caption_keys(demo_dataset), 1.0))
    for info, message in (
        (MetricInfo(""), "needs a name"),
        (MetricInfo("x" * 101), "at most 100"),
        (MetricInfo("Ok", paper_url="javascript:alert(1)"), "must start with https://"),
        (MetricInfo("Ok", code_url="https://example.org/" + "x" * 300), "at most 200"),
    ):
        with pytest.raises(MetricRefused, match=message):
            metric_submit(owner=captioner, info=info, files=[ScoresFile(demo_dataset, "s.jsonl", content)])
    with pytest.raises(MetricRefused, match="no scores file"):
        metric_submit(owner=captioner, info=MetricInfo("Ok"), files=[])
    assert not Metric.objects.filter(family="submitted").exists()


def test_control_characters_in_names_and_texts_are_refused_and_nothing_stored(demo_dataset, captioner):
    """Other people read a metric's name and description in their terminal (`capbench metrics`):
    `ESC ]0;…` would set its title. C0, DEL and C1 controls are refused with the field and place;
    a description may keep its line breaks and tabs (a textarea sends \\r\\n)."""
    content = jsonl(dict.fromkeys(caption_keys(demo_dataset), 1.0))
    for info, file_name, message in (
        (
            MetricInfo("Evil\x1b]0;owned\x07"),
            "s.jsonl",
            r"field 'name': contains a control character \(U\+001B at character 5\)",
        ),
        (MetricInfo("Tab\tname"), "s.jsonl", r"field 'name': .*U\+0009"),
        (MetricInfo("Ok", "fine\nthen \x9b2J"), "s.jsonl", r"field 'description': .*U\+009B at character 11"),
        (MetricInfo("Ok", "", "https://e.org/\x7f"), "s.jsonl", r"field 'paper URL': .*U\+007F"),
        (MetricInfo("Ok"), "s\x1b[2J.jsonl", r"demo: field 'file name' \('s\\x1b\[2J.jsonl'\): .*U\+001B"),
    ):
        with pytest.raises(MetricRefused, match=message):
            metric_submit(owner=captioner, info=info, files=[ScoresFile(demo_dataset, file_name, content)])
    assert not Metric.objects.filter(family="submitted").exists()
    assert not MetricUpload.objects.exists()
    upload = submit(captioner, demo_dataset, content, name="Plain", description="Two lines,\r\nand\ta tab")
    assert upload.metric_version.metric.description == "Two lines,\r\nand\ta tab"


def test_uploading_again_makes_a_new_version_and_the_same_scores_are_refused(scored, captioner):
    first = submit(captioner, scored, jsonl(builtin_scores(scored, "bleu_4")), name="Mine")
    second = submit(captioner, scored, jsonl(builtin_scores(scored, "cider_d")), name="Mine")
    metric = second.metric_version.metric
    assert first.metric_version.metric == metric
    assert [v.version for v in metric.versions.all()] == ["1", "2"]
    slug = metric.slug
    assert metric.current_version == second.metric_version
    assert re.fullmatch(r"mine-[0-9a-f]{6}", slug)
    with pytest.raises(MetricRefused, match=f"these scores are {slug} version 2 already"):
        submit(captioner, scored, jsonl(builtin_scores(scored, "cider_d")), name="Mine")
    with pytest.raises(MetricRefused, match="was submitted as higher is better"):
        submit(captioner, scored, jsonl(builtin_scores(scored, "rouge_l")), name="Mine", higher_is_better=False)
    # The metric board shows the newest version's numbers (cider_d's), the page lists both.
    from leaderboards.metric_board import metric_board

    _, rows = metric_board(protocol_name="paper", extra={slug})
    row = next(row for row in rows if row.column.slug == slug)
    cider = next(row for row in rows if row.column.slug == "cider_d")
    assert [r.value for r in row.values] == [r.value for r in cider.values]


def test_a_name_that_reads_as_a_built_in_metrics_is_refused(demo_dataset, captioner):
    """ "BLEU-4" beside the built-in bleu_4 would pass for it: a name equal to a built-in metric's
    name or slug once case, spaces and punctuation are ignored is refused, and nothing stored."""
    content = jsonl(dict.fromkeys(caption_keys(demo_dataset), 1.0))
    for name, builtin in (
        ("BLEU-4", "BLEU-4 \\(bleu_4\\)"),
        ("bleu 4", "bleu_4"),
        ("Bleu_4", "bleu_4"),
        ("CIDEr D", "cider_d"),
        ("ROUGE–L!", "rouge_l"),
        ("ＢＬＥＵ４", "bleu_4"),  # full-width letters read as plain ones (NFKC)
    ):
        with pytest.raises(MetricRefused, match=f"field 'name': .* reads as the built-in metric .*{builtin}"):
            metric_submit(owner=captioner, info=MetricInfo(name), files=[ScoresFile(demo_dataset, "s.jsonl", content)])
    assert not Metric.objects.filter(family="submitted").exists()
    upload = submit(captioner, demo_dataset, content, name="BLEU-4 with synonyms")
    assert upload.metric_version.metric.name == "BLEU-4 with synonyms"


def test_every_uploaded_slug_carries_a_random_suffix_so_it_tells_nothing_of_other_names(
    demo_dataset, captioner, django_user_model
):
    """A bare slug for a free name and a suffixed one for a taken name would tell that someone,
    perhaps privately, holds the name: every new metric's slug is its name's and a random suffix.
    A metric stored before with a bare slug keeps it (its address), new versions included."""
    content = jsonl(dict.fromkeys(caption_keys(demo_dataset), 1.0))
    other = UserFactory(username="other")
    first = submit(captioner, demo_dataset, content, name="Hidden gem").metric_version.metric
    second = submit(other, demo_dataset, content, name="Hidden gem").metric_version.metric
    fresh = submit(other, demo_dataset, content, name="Untaken name").metric_version.metric
    assert re.fullmatch(r"hidden-gem-[0-9a-f]{6}", first.slug)
    assert re.fullmatch(r"hidden-gem-[0-9a-f]{6}", second.slug)
    assert first.slug != second.slug
    assert re.fullmatch(r"untaken-name-[0-9a-f]{6}", fresh.slug)
    page = submit(captioner, demo_dataset, content, name="All").metric_version.metric
    assert re.fullmatch(r"all-[0-9a-f]{6}", page.slug)  # /metrics/all/ is the index
    legacy = submit(captioner, demo_dataset, content, name="Legacy").metric_version.metric
    Metric.objects.filter(pk=legacy.pk).update(slug="legacy")  # as stored before the suffix was always given
    again = submit(captioner, demo_dataset, jsonl(dict.fromkeys(caption_keys(demo_dataset), 2.0)), name="Legacy")
    assert again.metric_version.metric.slug == "legacy"
    assert again.metric_version.version == "2"


def test_private_metrics_are_their_owners_alone(fresh_page_memory, scored, captioner, client, django_user_model):
    upload = submit(captioner, scored, jsonl(builtin_scores(scored, "cider_d")), name="Qzhidden metric")
    slug = upload.metric_version.metric.slug
    stranger = UserFactory(username="stranger")
    # Its own clusters, apart from the public ones (which do not name it).
    assert not any(slug in r.metrics for r in SignificanceResult.objects.filter(subject__isnull=True))
    assert SignificanceResult.objects.filter(subject__slug=slug).exists()
    pages = [
        "/metrics/",
        "/metrics/all/",
        f"/metrics/{slug}/",
        "/api/v1/metrics/",
        f"/api/v1/metrics/{slug}/",
        f"/api/v1/correlations/?metric={slug}",
        "/api/v1/metric-submissions/",
        f"/api/v1/scores/?metric={slug}",
    ]
    for viewer in (None, stranger):
        client.logout()
        if viewer is not None:
            client.force_login(viewer)
        for url in pages:
            response = client.get(url)
            assert response.status_code in (200, 404), url
            assert b"Qzhidden" not in response.content and f'"{slug}"'.encode() not in response.content, (viewer, url)
    client.force_login(captioner)
    board = client.get("/metrics/").content.decode()
    assert "Qzhidden metric" in board
    assert "private: only you" in board
    assert client.get(f"/metrics/{slug}/").status_code == 200
    assert any(m["slug"] == slug for m in client.get("/api/v1/metrics/").json()["results"])
    # Published: everyone sees it, in the public clusters; withdrawn: gone again.
    upload_visibility_set(upload=upload.submission, is_public=True, kind=METRICS)
    upload_correlate(upload_id=upload.pk)  # on_commit ran the clusters in a task we have no worker for here
    client.logout()
    assert b"Qzhidden metric" in client.get("/metrics/").content
    assert any(slug in r.metrics for r in SignificanceResult.objects.filter(subject__isnull=True))
    upload_withdraw(upload=upload.submission, kind=METRICS)
    from scoring.services.correlations import dataset_significance

    dataset_significance(dataset=scored)
    assert b"Qzhidden metric" not in client.get("/metrics/").content
    assert client.get(f"/metrics/{slug}/").status_code == 404
    assert not any(slug in r.metrics for r in SignificanceResult.objects.filter(subject__isnull=True))


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_the_command_line_contract(scored, captioner, tmp_path, capsys, workers):
    workers.start("cpu")
    path = tmp_path / "scores.jsonl"
    path.write_bytes(jsonl(builtin_scores(scored, "cider_d")))
    call_command(
        "metrics",
        "submit",
        "demo",
        str(path),
        "--user",
        "captioner",
        "--name",
        "My metric",
        "--wait",
        "--timeout",
        "120",
    )
    out = capsys.readouterr().out.splitlines()
    slug = Metric.objects.get(name="My metric").slug
    assert re.fullmatch(r"my-metric-[0-9a-f]{6}", slug)
    assert out[0].startswith(f"metric {slug} version 1: ")
    assert "candidates scored on demo" in out[0]
    lines = [line.split() for line in out[1:]]
    assert lines and all(line[0] == slug and line[1] == "demo" for line in lines)
    theirs = cells("cider_d")
    for line in lines:
        slug, _, protocol, level, dimension, statistic, value, low, high, n, *rest = line
        result = theirs[(protocol, level, dimension, statistic)]
        assert value == f"{100 * result.value:.2f}"
        assert low == f"[{100 * result.low:.2f},"
        assert high == f"{100 * result.high:.2f}]"
        if level == "caption":
            assert rest and rest[0].startswith("cluster=")
    candidates = tmp_path / "candidates.jsonl"
    call_command("datasets", "candidates", "demo", "-o", str(candidates))
    first = json.loads(candidates.read_text().splitlines()[0])
    assert list(first)[:4] == ["caption_id", "candidate", "references", "image"]
    bad = tmp_path / "bad.csv"
    bad.write_text("caption_id,score\nnope,1\n")
    with pytest.raises(CommandError, match=r"nothing was stored: bad.csv \(demo\): line 2, field 'caption_id'"):
        call_command("metrics", "submit", "demo", str(bad), "--user", "captioner", "--name", "Bad")


def test_the_api_loop(fresh_page_memory, scored, captioner, client):
    token = Token.objects.create(user=captioner)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    rows = client.get("/api/v1/datasets/demo/candidates/?format=jsonl", **auth)
    assert rows.status_code == 200
    keys = [json.loads(line)["caption_id"] for line in b"".join(rows.streaming_content).decode().splitlines()]
    scores = builtin_scores(scored, "rouge_l")
    assert sorted(keys) == sorted(scores)
    content = "caption_id,score\n" + "\n".join(f"{key},{scores[key]}" for key in keys)
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(
        "/api/v1/metric-submissions/",
        {
            "name": "Api metric",
            "dataset": "demo",
            "scores": SimpleUploadedFile("s.csv", content.encode()),
            "is_public": "true",
        },
        **auth,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    slug = body["metric"]
    assert re.fullmatch(r"api-metric-[0-9a-f]{6}", slug)
    assert body["uploads"][0]["datasets"][0]["missing"] == 0
    upload_correlate(upload_id=body["uploads"][0]["id"])
    board = client.get("/api/v1/leaderboards/metrics/").json()
    row = next(m for m in board["metrics"] if m["metric"] == slug)
    assert row["submitted"]["owner"] == "captioner"
    assert row["submitted"]["private"] is False
    assert all(
        cell is None or (cell["rank"] >= 1 and cell["low"] <= cell["value"] <= cell["high"]) for cell in row["cells"]
    )
    assert any(cell and cell["rank"] for cell in row["cells"])
    correlations = client.get(f"/api/v1/correlations/?metric={slug}").json()["results"]
    assert {(c["statistic"], c["value"]) for c in correlations} == {
        (r.statistic, r.value) for r in cells("rouge_l").values()
    }
    bad = client.post(
        "/api/v1/metric-submissions/",
        {"name": "Api metric", "dataset": "demo", "scores": SimpleUploadedFile("s.csv", b"caption_id,score\nx,1\n")},
        **auth,
    )
    assert bad.status_code == 400
    assert "line 2, field 'caption_id'" in json.dumps(bad.json())
    for name, refusal in (
        ("Evil\x1b]0;t\x07", "field 'name': contains a control character (U+001B"),
        ("BLEU-4", "bleu_4"),
    ):
        refused = client.post(
            "/api/v1/metric-submissions/",
            {"name": name, "dataset": "demo", "scores": SimpleUploadedFile("s.csv", content.encode())},
            **auth,
        )
        assert refused.status_code == 400 and refusal in refused.json()["detail"], refused.content
    assert client.post("/api/v1/metric-submissions/", {"name": "x"}).status_code in (401, 403)
    hidden = client.post(f"/api/v1/metric-submissions/{body['id']}/visibility/", {"public": "false"}, **auth)
    assert hidden.status_code == 200
    assert hidden.json()["is_public"] is False
    assert client.get("/api/v1/metric-submissions/").json()["results"] == []  # anonymous: nothing public now
    withdrawn = client.post(f"/api/v1/metric-submissions/{body['id']}/withdraw/", **auth)
    assert withdrawn.json()["status"] == "withdrawn"
    refused = client.post(f"/api/v1/metric-submissions/{body['id']}/visibility/", {"public": "true"}, **auth)
    assert refused.status_code == 400
    assert refused.json() == {"detail": "a withdrawn metric cannot be made public"}


def test_the_web_form(fresh_page_memory, scored, captioner, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(captioner)
    page = client.get("/submit/metric/")
    assert page.status_code == 200
    assert b"Scores for Demo" in page.content
    scores = builtin_scores(scored, "bleu_4")
    refused = client.post(
        "/submit/metric/",
        {"name": "Form metric", "scores_demo": SimpleUploadedFile("s.jsonl", b'{"caption_id": "zz", "score": 1}')},
    )
    assert refused.status_code == 400
    assert b"nothing was stored" in refused.content
    assert b"line 1" in refused.content
    done = client.post(
        "/submit/metric/",
        {"name": "Form metric", "scores_demo": SimpleUploadedFile("s.jsonl", jsonl(scores)), "trained_on": ["demo"]},
    )
    assert done.status_code == 302
    assert re.fullmatch(r"/metrics/form-metric-[0-9a-f]{6}/", done["Location"])
    upload_correlate(upload_id=MetricUpload.objects.get().pk)
    page = client.get(done["Location"]).content.decode()
    assert "Integrity checks" in page
    assert "may have been trained on these judgments" in page
    assert f"{len(scores)} of {len(scores)} (100.0%)" in page
    mine = client.get("/metric-submissions/mine/").content.decode()
    assert "Form metric" in mine
    assert "make public" in mine
    # The owner's actions (catalog.uploads.views, the metric kind): publish, withdraw, then no publishing.
    submission = MetricSubmission.objects.get()
    published = client.post(f"/metric-submissions/{submission.pk}/visibility/", {"public": "1"})
    assert published["Location"] == "/metric-submissions/mine/"
    assert MetricSubmission.objects.get().is_public
    asked = client.get(f"/metric-submissions/{submission.pk}/withdraw/")
    assert "A withdrawn metric cannot be published again" in asked.content.decode()
    withdrawn = client.post(f"/metric-submissions/{submission.pk}/withdraw/", follow=True)
    assert "“Form metric” was withdrawn; its files and scores are kept." in withdrawn.content.decode()
    refused = client.post(f"/metric-submissions/{submission.pk}/visibility/", {"public": "1"}, follow=True)
    assert "a withdrawn metric cannot be made public" in refused.content.decode()
    submission.refresh_from_db()
    assert submission.status == MetricSubmission.Status.WITHDRAWN
    assert not submission.is_public
    client.force_login(UserFactory())
    assert client.get(f"/metric-submissions/{submission.pk}/withdraw/").status_code == 404
