"""`models fetch` for a checkpoint the authors publish as a zip: the one file lands in the store."""

import os
import zipfile

import pytest

from capbench_eval.backbones.catalogue import Checkpoint
from capbench_eval.backbones.fetch import fetch, fetch_checkpoint
from capbench_eval.errors import UnknownModel


def test_a_zipped_checkpoint_is_unpacked_into_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path / "models"))
    archive = tmp_path / "reprod.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("reprod/hparams.yaml", "layer: mix\n")
        bundle.writestr("reprod/reprod.ckpt", b"weights")
    entry = Checkpoint("polos/reprod.ckpt", "test", url=archive.as_uri(), member="reprod.ckpt")
    assert fetch_checkpoint(entry) == str(entry.path)
    assert entry.path.read_bytes() == b"weights"


def test_a_zip_without_the_file_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path / "models"))
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("readme.txt", "nothing")
    entry = Checkpoint("polos/reprod.ckpt", "test", url=archive.as_uri(), member="reprod.ckpt")
    with pytest.raises(RuntimeError, match="holds no reprod.ckpt"):
        fetch_checkpoint(entry)
    assert not entry.path.exists()


def test_the_checkpoint_replaces_an_old_one_in_one_step_and_leaves_nothing_beside(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path / "models"))
    archive = tmp_path / "reprod.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("reprod/reprod.ckpt", b"new weights")
    entry = Checkpoint("polos/reprod.ckpt", "test", url=archive.as_uri(), member="reprod.ckpt")
    entry.path.parent.mkdir(parents=True)
    entry.path.write_bytes(b"old")
    replaced = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda source, target: (replaced.append(target), real_replace(source, target)))
    fetch_checkpoint(entry)
    assert entry.path.read_bytes() == b"new weights"
    assert replaced == [entry.path]
    assert [p.name for p in entry.path.parent.iterdir()] == ["reprod.ckpt"]


def test_an_unknown_name_is_an_unknown_model_listing_the_known_ones():
    with pytest.raises(UnknownModel, match=r"unknown model 'no/such' \(known: .*polos/reprod.ckpt"):
        fetch("no/such")
    assert issubclass(UnknownModel, KeyError)
