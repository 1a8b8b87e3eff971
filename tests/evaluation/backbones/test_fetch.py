"""`models fetch` for a checkpoint the authors publish as a zip: the one file lands in the store."""

import zipfile

import pytest

from evaluation.backbones.catalogue import Checkpoint
from evaluation.backbones.fetch import fetch_checkpoint


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
