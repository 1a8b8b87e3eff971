"""Log records carry the job and batch they are about (plumbing/logs.py), as JSON or as text."""

import json
import logging
import os
import subprocess
import sys

from plumbing.logs import JsonFormatter, TextFormatter, bind, log_context


def _record(message: str, exc_info=None, **extra) -> logging.LogRecord:
    record = logging.LogRecord("scoring.services.batches", logging.INFO, __file__, 1, message, (), exc_info)
    record.__dict__.update(extra)
    return record


def test_json_lines_carry_the_context_bound_where_the_work_happens():
    with log_context(batch_id=7, task_id="t-1", worker="gpu@machine-b"):
        bind(job_id=3, metric="clip_s")
        line = JsonFormatter().format(_record("batch 1 of job 3 stored"))
    entry = json.loads(line)
    assert entry["message"] == "batch 1 of job 3 stored"
    assert entry["level"] == "INFO"
    assert entry["logger"] == "scoring.services.batches"
    assert entry["time"].endswith("+00:00")
    assert (entry["job_id"], entry["batch_id"], entry["task_id"], entry["metric"]) == (3, 7, "t-1", "clip_s")
    # Outside the context nothing is carried over; fields given as `extra` are written.
    outside = json.loads(JsonFormatter().format(_record("planned", submission_id=5)))
    assert outside["submission_id"] == 5
    assert "job_id" not in outside
    assert "batch_id" not in outside


def test_an_exception_stays_inside_its_json_line():
    try:
        raise ValueError("boom")
    except ValueError:
        line = JsonFormatter().format(_record("failed", exc_info=sys.exc_info()))
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exception"]


def test_text_lines_name_the_same_fields():
    with log_context(job_id=3, batch_id=7):
        text = TextFormatter().format(_record("stored"))
    assert text.endswith("scoring.services.batches: stored [job_id=3 batch_id=7]")


def test_an_unknown_format_stops_the_settings_naming_the_variable():
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**os.environ, "CAPBENCH_LOG_FORMAT": "xml"},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "CAPBENCH_LOG_FORMAT='xml' is not valid: expected text or json" in result.stderr
