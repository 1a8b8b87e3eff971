"""evaluation/capbench_eval/files.py: whole-or-nothing writes and file hashes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from capbench_eval.backbones.catalogue import folder_sha256
from capbench_eval.files import atomic_path, atomic_write_bytes, atomic_write_text, file_sha256


def test_writes_land_whole_and_leave_nothing_beside(tmp_path):
    target = tmp_path / "deep" / "reply.json"
    atomic_write_text(target, "{}")
    atomic_write_bytes(tmp_path / "blob", b"\x00\x01")
    assert target.read_text() == "{}"
    assert (tmp_path / "blob").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["reply.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_partial(tmp_path):
    target = tmp_path / "scores.jsonl"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target, suffix=".npy") as partial:
        assert partial.name.endswith(".npy")
        assert partial.parent == tmp_path
        partial.write_text("half")
        raise RuntimeError("stopped")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.jsonl"]


def test_the_hash_is_sha256_of_the_content(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"x" * (3 << 20))
    assert file_sha256(path) == file_sha256(str(path)) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


def test_a_weights_sidecar_is_written_under_a_name_the_folder_hash_leaves_out(tmp_path, monkeypatch):
    (tmp_path / "model.bin").write_bytes(b"weights")
    partials = []
    real_replace = os.replace

    def replace(source, target):
        partials.append(Path(source).name)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    digest = folder_sha256(tmp_path)
    assert len(partials) == 1 and partials[0].endswith(".sha256")  # never part of the folder's hash
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.bin", "model.bin.sha256"]
    assert folder_sha256(tmp_path) == digest
