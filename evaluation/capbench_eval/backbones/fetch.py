"""`python -m capbench_eval models fetch NAME` on a machine with network: download a catalogue model
through its own library and write it into the local store in the layout the metrics load.

open_clip, torch, diffusers and transformers are imported inside `fetch`, for the one kind of model
it fetches: importing this module (the CLI does) must not load them."""

from __future__ import annotations

import shutil
import tempfile
import urllib.request
import zipfile
from pathlib import Path
from typing import Protocol

from capbench_eval.backbones.catalogue import CATALOGUE, Checkpoint, DiffusersPipeline, HfModel, OpenClipModel
from capbench_eval.errors import UnknownModel
from capbench_eval.files import atomic_path


class Saved(Protocol):
    def save_pretrained(self, save_directory: Path) -> object: ...


class Loader(Protocol):
    """A transformers class loaded by name (AutoModel, AutoProcessor, SamModel …)."""

    def from_pretrained(self, pretrained_model_name_or_path: str) -> Saved: ...


def fetch(name: str) -> str:
    if name not in CATALOGUE:
        raise UnknownModel(f"unknown model {name!r} (known: {', '.join(CATALOGUE)})")
    entry = CATALOGUE[name]
    if isinstance(entry, Checkpoint):
        if not entry.url:
            raise RuntimeError(f"{entry.name} has no direct download: {entry.missing()}")
        return fetch_checkpoint(entry)
    if isinstance(entry, OpenClipModel):
        import open_clip
        import torch

        with tempfile.TemporaryDirectory(prefix="capbench-fetch-") as cache:
            model = open_clip.create_model(entry.architecture, pretrained=entry.pretrained, cache_dir=cache)
            target = entry.folder / f"{entry.pretrained}.pt"
            with atomic_path(target) as partial:  # (it makes the folder)
                torch.save(model.state_dict(), partial)
        return str(target)
    if isinstance(entry, DiffusersPipeline):
        from diffusers import DiffusionPipeline

        DiffusionPipeline.from_pretrained(entry.repo_id).save_pretrained(entry.folder)
        return str(entry.folder)
    assert isinstance(entry, HfModel)
    from transformers import (
        AutoImageProcessor,
        AutoModel,
        AutoModelForDepthEstimation,
        AutoModelForImageTextToText,
        AutoModelForSeq2SeqLM,
        AutoProcessor,
        AutoTokenizer,
        SamModel,
    )

    entry.folder.mkdir(parents=True, exist_ok=True)

    loaders: dict[str, tuple[Loader, Loader]] = {
        "text": (AutoModel, AutoTokenizer),
        "image-text-to-text": (AutoModelForImageTextToText, AutoProcessor),
        "depth-estimation": (AutoModelForDepthEstimation, AutoImageProcessor),
        "mask-generation": (SamModel, AutoProcessor),
        "text2text": (AutoModelForSeq2SeqLM, AutoTokenizer),
    }
    model, companion = loaders[entry.task]
    model.from_pretrained(entry.repo_id).save_pretrained(entry.folder)
    companion.from_pretrained(entry.repo_id).save_pretrained(entry.folder)
    return str(entry.folder)


def fetch_checkpoint(entry: Checkpoint) -> str:
    """Download the authors' zip, take the one file the metric loads, move it into place whole."""
    with tempfile.TemporaryDirectory(prefix="capbench-fetch-") as work:
        archive = Path(work) / "download.zip"
        with urllib.request.urlopen(entry.url) as response, archive.open("wb") as handle:  # noqa: S310 (catalogue URL)
            shutil.copyfileobj(response, handle)
        with zipfile.ZipFile(archive) as bundle:
            members = [name for name in bundle.namelist() if Path(name).name == entry.member]
            if not members:
                raise RuntimeError(f"{entry.url} holds no {entry.member}")
            extracted = Path(bundle.extract(members[0], work))
        # Copied beside the target under a partial name, then renamed onto it in one step (a move
        # from the temporary folder may cross file systems: a copy that readers could see half of).
        with atomic_path(entry.path) as partial:
            shutil.copy2(extracted, partial)
    return str(entry.path)
