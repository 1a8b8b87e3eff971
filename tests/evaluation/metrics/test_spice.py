"""SPICE without CoreNLP 3.6.0 says so, clearly, and never returns numbers."""

import subprocess
import sys

import pytest

from capbench_eval.metrics import CaptionRow, MetricUnavailable, get

ROWS = [CaptionRow("1", "a dog runs on grass", ("a dog is running on the grass",))]


def test_without_corenlp_spice_is_unavailable_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path))
    availability = get("spice").availability()
    assert not availability.available
    assert "CoreNLP 3.6.0 is not provisioned" in availability.reason
    assert str(tmp_path) in availability.reason
    with pytest.raises(
        MetricUnavailable, match="stanford-corenlp-3.6.0.jar, stanford-corenlp-3.6.0-models.jar missing"
    ):
        get("spice").score(ROWS)


def test_half_provisioned_corenlp_names_the_missing_jar(tmp_path, monkeypatch):
    (tmp_path / "stanford-corenlp-3.6.0").mkdir()
    (tmp_path / "stanford-corenlp-3.6.0" / "stanford-corenlp-3.6.0.jar").write_bytes(b"")
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path))
    with pytest.raises(MetricUnavailable, match=r": stanford-corenlp-3.6.0-models.jar missing"):
        get("spice").score(ROWS)


def test_broken_corenlp_jars_fail_loudly_not_with_numbers(tmp_path, monkeypatch):
    folder = tmp_path / "stanford-corenlp-3.6.0"
    folder.mkdir()
    for name in ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar"):
        (folder / name).write_bytes(b"not a jar")
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="SPICE failed"):
        get("spice").score(ROWS)


def test_metrics_list_reports_spice_unavailable(repo_root, tmp_path):
    env = {"CAPBENCH_MODEL_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "capbench_eval", "metrics", "list"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    assert "spice\tunavailable: Stanford CoreNLP 3.6.0 is not provisioned" in out
