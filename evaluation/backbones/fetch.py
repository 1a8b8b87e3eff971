"""`python -m evaluation models fetch NAME` on a machine with network: download a catalogue model
through its own library and write it into the local store in the layout the metrics load."""
from __future__ import annotations

import tempfile

from evaluation.backbones.catalogue import CATALOGUE, Checkpoint, HfModel, OpenClipModel


def fetch(name: str) -> str:
    if name not in CATALOGUE:
        raise KeyError(f"unknown model {name!r} (known: {', '.join(CATALOGUE)})")
    entry = CATALOGUE[name]
    if isinstance(entry, Checkpoint):
        raise RuntimeError(f"{entry.name} is not on a public hub: {entry.missing()}")
    if isinstance(entry, OpenClipModel):
        import open_clip
        import torch

        with tempfile.TemporaryDirectory(prefix="capbench-fetch-") as cache:
            model = open_clip.create_model(entry.architecture, pretrained=entry.pretrained, cache_dir=cache)
            entry.folder.mkdir(parents=True, exist_ok=True)
            target = entry.folder / f"{entry.pretrained}.pt"
            torch.save(model.state_dict(), target)
        return str(target)
    assert isinstance(entry, HfModel)
    from transformers import AutoModel, AutoTokenizer

    entry.folder.mkdir(parents=True, exist_ok=True)
    AutoModel.from_pretrained(entry.repo_id).save_pretrained(entry.folder)
    AutoTokenizer.from_pretrained(entry.repo_id).save_pretrained(entry.folder)
    return str(entry.folder)
