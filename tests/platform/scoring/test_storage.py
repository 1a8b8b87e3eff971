"""How scores are stored at scale (docs/performance.md, "Ten million scores"): compact rows, the
COPY write path, reuse keys, and the query counts and plans that must not grow with the table."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from catalog.models import Caption
from scoring.models import INPUT_KEY_BYTES, JobBatch, MetricVersion, Score
from scoring.services.batches import _known_scores, scores_write
from scoring.services.metrics import metrics_sync
from scoring.services.rows import caption_rows, input_key
from tests.platform.scoring.inline import submit_planned
from tests.platform.support.query_plans import plan_of

pytestmark = pytest.mark.django_db


def some_scores(dataset, slug="bleu_4", count: int | None = 5) -> list[Score]:
    metrics_sync()
    version = MetricVersion.objects.get(metric__slug=slug, metric__current_version__isnull=False)
    captions = list(Caption.objects.filter(item__dataset=dataset).order_by("id")[:count])
    return [
        Score(
            caption_id=caption.pk,
            metric_version=version,
            value=0.25 * (n % 5),
            statistics=[9, 10, 8, 6, 4, 2, 9, 8, 7, 6],
            detail={"reply": "Score: 7\x00 of 10", "tokens": n},
            input_key=n.to_bytes(INPUT_KEY_BYTES, "big"),
        )
        for n, caption in enumerate(captions)
    ]


def test_scores_are_written_by_copy_and_read_back_as_written(demo_dataset):
    scores = some_scores(demo_dataset)
    with CaptureQueriesContext(connection) as queries:
        scores_write(scores)
    assert len(queries) <= 4  # temporary table, COPY, INSERT … ON CONFLICT, emptying: whatever the row count
    stored = {s.caption_id: s for s in Score.objects.filter(metric_version=scores[0].metric_version)}
    assert len(stored) == len(scores)
    for score in scores:
        row = stored[score.caption_id]
        assert (row.value, row.statistics, row.input_key) == (score.value, score.statistics, score.input_key)
        # PostgreSQL's jsonb cannot hold NUL: it becomes U+FFFD, as an undecodable byte would.
        assert row.detail == {"reply": "Score: 7\ufffd of 10", "tokens": score.detail["tokens"]}


def test_writing_again_replaces_the_scores_of_the_same_captions(demo_dataset):
    scores = some_scores(demo_dataset)
    scores_write(scores)
    for score in scores:
        score.value, score.error = None, "the judge gave no number"
    scores_write(scores[:2])
    values = dict(Score.objects.filter(metric_version=scores[0].metric_version).values_list("caption_id", "value"))
    assert len(values) == len(scores)
    assert [values[s.caption_id] for s in scores[:2]] == [None, None]
    assert values[scores[2].caption_id] == 0.5


def test_an_ngram_score_row_stays_compact(demo_dataset):
    """A BLEU row: 16-byte key, statistics as 27 bytes of text (128 as jsonb), no detail."""
    scores = some_scores(demo_dataset)
    for score in scores:
        score.detail = None
    scores_write(scores)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT max(pg_column_size(s.*)), max(pg_column_size(s.statistics)), max(pg_column_size(s.input_key)) "
            "FROM scoring_score s"
        )
        row, statistics, key = cursor.fetchone()
    assert key == 1 + INPUT_KEY_BYTES
    assert statistics <= 28
    assert row <= 136  # 264 before: a 64-character key and jsonb statistics


def test_the_reuse_key_is_the_first_half_of_the_sha256_the_hex_keys_held(demo_dataset):
    """Migration scoring 0012 decoded stored hex keys to their first 16 bytes: the key computed now
    for the same work must be exactly that, or every stored score would stop being reused."""
    import hashlib

    [row] = caption_rows([Caption.objects.filter(item__dataset=demo_dataset).first().pk], media=False)
    payload = json.dumps(["abc", row.row.candidate, list(row.row.references), "", "ctx"], ensure_ascii=False)
    old_hex = hashlib.sha256(payload.encode()).hexdigest()
    assert input_key("abc", row, "ctx") == bytes.fromhex(old_hex[:32])


def test_the_reuse_lookup_is_one_statement_through_its_index(demo_dataset):
    """Every caption of the dataset scored by one version (as at scale: 400,000 rows a version), so
    that the planner weighs the key's index against reading the version's rows."""
    everything = some_scores(demo_dataset, count=None)
    for n, score in enumerate(everything):
        score.input_key = n.to_bytes(INPUT_KEY_BYTES, "big")
    scores_write(everything)
    scores = everything[:5]
    keys = [score.input_key for score in scores] + [b"\xff" * INPUT_KEY_BYTES]
    with CaptureQueriesContext(connection) as queries:
        found = _known_scores(scores[0].metric_version, keys)
    assert len(queries) == 1
    assert set(found) == {score.input_key for score in scores if score.value is not None}
    assert found[scores[1].input_key]["statistics"] == [9, 10, 8, 6, 4, 2, 9, 8, 7, 6]
    assert "score_reuse" in plan_of(queries[0]["sql"])  # the statement as sent, its keys inlined


def test_a_generated_picture_is_found_through_its_index_not_by_reading_every_score(demo_dataset):
    scores = some_scores(demo_dataset, count=2)
    scores[0].detail = {"generated_image": "ab" * 16}
    scores_write(scores)
    assert Score.objects.naming_picture("ab" * 16).count() == 1
    assert Score.objects.naming_picture("cd" * 16).count() == 0
    sql, params = Score.objects.naming_picture("ab" * 16).query.sql_with_params()
    assert "score_generated_image" in plan_of(sql, params)


def test_syncing_an_unchanged_registry_reads_and_writes_nothing_per_metric():
    metrics_sync()
    with CaptureQueriesContext(connection) as queries:
        assert metrics_sync() == []
    writes = [q["sql"] for q in queries if q["sql"].startswith(("UPDATE", "INSERT"))]
    assert writes == [] or all("is_registered" in sql for sql in writes)
    assert len(queries) <= 6  # a transaction's two statements, two reads and the unregistered sweep


@pytest.mark.django_db(transaction=True)
def test_planning_costs_the_same_number_of_statements_whatever_the_number_of_batches(demo_dataset, captioner, settings):
    """Batches are sent over one broker connection and marked sent in one statement per job."""
    counts = []
    for size in (50, 10):
        settings.CAPBENCH_BATCH_SIZE = {"cpu": size, "gpu": size, "api": size}
        with CaptureQueriesContext(connection) as queries:
            submission = submit_planned(
                captioner, demo_dataset, metrics=["bleu_4", "rouge_l"], name=f"Batches of {size}"
            )
        batches = JobBatch.objects.filter(job__system=submission.system)
        assert batches.count() == 2 * -(-Caption.objects.filter(system=submission.system).count() // size)
        assert not batches.filter(enqueued_at__isnull=True).exists()
        counts.append(len([q for q in queries if "scoring_jobbatch" in q["sql"]]))
    assert counts[0] == counts[1]


def test_a_score_no_metric_computed_has_no_key_and_no_entry_in_the_reuse_index(demo_dataset):
    """Uploaded scores (a researcher's metric) have nothing to reuse: NULL, not one shared empty key
    piling every such row into one hash bucket."""
    scores = some_scores(demo_dataset)
    for score in scores:
        score.input_key = None
    scores_write(scores)
    assert Score.objects.filter(input_key__isnull=True).count() == len(scores)
    assert _known_scores(scores[0].metric_version, [b""]) == {}
    assert Score(caption_id=scores[0].caption_id, metric_version=scores[0].metric_version).input_key is None


def test_statistics_edited_in_a_form_are_json_or_refused():
    from django.core.exceptions import ValidationError

    field = Score._meta.get_field("statistics")
    assert field.formfield().clean("[1, 2]") == [1, 2]
    assert field.to_python("") is None
    with pytest.raises(ValidationError):
        field.to_python("6 4 3.5")
