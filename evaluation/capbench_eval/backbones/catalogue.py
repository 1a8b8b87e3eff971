"""Which models the metrics load, by their real names, and where each lives in the local store.

$CAPBENCH_MODEL_DIR/open_clip/<architecture>/<pretrained>.(safetensors|bin|pt)
$CAPBENCH_MODEL_DIR/open_clip/<architecture>/<architecture>.json   (optional config override)
$CAPBENCH_MODEL_DIR/hf/<org>/<name>/                                (save_pretrained folder)
$CAPBENCH_MODEL_DIR/checkpoints/<relative path>                     (fine-tuned weights)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from capbench_eval import files
from capbench_eval.backbones.store import model_dir

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


@dataclass(frozen=True)
class OpenClipModel:
    architecture: str  # open_clip's model name, e.g. "ViT-B-32-quickgelu"
    pretrained: str  # open_clip's pretrained tag, e.g. "openai"

    @property
    def name(self) -> str:
        return f"{self.architecture}/{self.pretrained}"

    @property
    def folder(self) -> Path:
        return model_dir() / "open_clip" / self.architecture

    def weights(self) -> Path | None:
        for suffix in WEIGHT_SUFFIXES:
            candidate = self.folder / f"{self.pretrained}{suffix}"
            if candidate.is_file():
                return candidate
        return None

    def config_override(self) -> Path | None:
        candidate = self.folder / f"{self.architecture}.json"
        return candidate if candidate.is_file() else None

    def missing(self) -> str:
        return (
            f"open_clip {self.name} weights are not in the model store ({self.folder}/{self.pretrained}.pt); "
            f"run `python -m capbench_eval models fetch {self.name}` on a machine with network"
        )


@dataclass(frozen=True)
class HfModel:
    repo_id: str  # e.g. "roberta-large"
    # How transformers loads it (and `models fetch` saves it): "text" (AutoModel + tokenizer),
    # "image-text-to-text" (+ processor), "depth-estimation" (+ image processor), "mask-generation"
    # (SAM + processor), "text2text" (a seq2seq model + tokenizer).
    task: str = "text"

    @property
    def vision_language(self) -> bool:
        return self.task == "image-text-to-text"

    @property
    def name(self) -> str:
        return self.repo_id

    @property
    def folder(self) -> Path:
        return model_dir() / "hf" / self.repo_id

    def present(self) -> bool:
        return (self.folder / "config.json").is_file()

    def missing(self) -> str:
        return (
            f"{self.repo_id} is not in the model store ({self.folder}); "
            f"run `python -m capbench_eval models fetch {self.repo_id}` on a machine with network"
        )


@dataclass(frozen=True)
class DiffusersPipeline(HfModel):
    """A diffusers pipeline folder (save_pretrained of the whole pipeline, with its model_index.json)."""

    task: str = "text-to-image"

    def present(self) -> bool:
        return (self.folder / "model_index.json").is_file()

    def missing(self) -> str:
        return (
            f"the {self.repo_id} pipeline is not in the model store ({self.folder}); "
            f"run `python -m capbench_eval models fetch {self.repo_id}` on a machine with network"
        )


@dataclass(frozen=True)
class Checkpoint:
    name: str  # e.g. "pacscore/clip_ViT-B-32.pth"
    source: str  # where a person gets it
    url: str = ""  # a direct download (a zip holding `member`), where the authors publish one
    member: str = ""  # the file's name inside that zip

    @property
    def path(self) -> Path:
        return model_dir() / "checkpoints" / self.name

    def missing(self) -> str:
        fetch = (
            f", or run `python -m capbench_eval models fetch {self.name}` on a machine with network" if self.url else ""
        )
        return f"checkpoint {self.name} is not in the model store ({self.path}); get it from {self.source}{fetch}"


CATALOGUE: dict[str, OpenClipModel | HfModel | DiffusersPipeline | Checkpoint] = {
    m.name: m
    for m in (
        OpenClipModel("ViT-B-32-quickgelu", "openai"),
        # OpenAI's towers were trained with QuickGELU: open_clip's "-quickgelu" configs, or the numbers drift.
        OpenClipModel("ViT-B-16-quickgelu", "openai"),
        OpenClipModel("ViT-L-14-quickgelu", "openai"),
        OpenClipModel("ViT-L-14", "laion2b_s32b_b82k"),
        HfModel("roberta-large"),
        Checkpoint(
            "pacscore/clip_ViT-B-32.pth", "the PAC-S README (github.com/aimagelab/pacscore, Google Drive folder)"
        ),
        Checkpoint(
            "pacscore/openClip_ViT-L-14.pth", "the PAC-S README (github.com/aimagelab/pacscore, Google Drive folder)"
        ),
        HfModel("princeton-nlp/sup-simcse-roberta-base"),
        HfModel("llava-hf/llava-1.5-13b-hf", task="image-text-to-text"),
        HfModel("llava-hf/llava-1.5-7b-hf", task="image-text-to-text"),
        HfModel("Qwen/Qwen2-VL-7B-Instruct", task="image-text-to-text"),
        DiffusersPipeline("black-forest-labs/FLUX.1-dev"),
        DiffusersPipeline("stabilityai/stable-diffusion-xl-base-1.0"),
        DiffusersPipeline("stable-diffusion-v1-5/stable-diffusion-v1-5"),
        OpenClipModel("EVA01-g-14", "laion400m_s11b_b41k"),
        HfModel("depth-anything/Depth-Anything-V2-Large-hf", task="depth-estimation"),
        Checkpoint(
            "ultralytics/yolov8x.pt",
            "the ultralytics release assets (`YOLO('yolov8x.pt')` downloads it; copy the file here)",
        ),
        Checkpoint(
            "alpha_clip/clip_l14_grit20m_fultune_2xe.pth",
            "the Alpha-CLIP model zoo (github.com/SunzeY/AlphaCLIP, model-zoo.md: Google Drive or OpenXLab)",
        ),
        Checkpoint(
            "mobilesamv2/ObjectAwareModel.pt",
            "the MobileSAMv2 weight bundle (github.com/ChaoningZhang/MobileSAM, MobileSAMv2 README, Google Drive)",
        ),
        HfModel("facebook/sam-vit-base", task="mask-generation"),
        HfModel("lizhuang144/flan-t5-base-VG-factual-sg", task="text2text"),
        Checkpoint(
            "camscore/fusion.pt",
            "CapBench itself: `manage.py metrics train camscore --dataset SLUG` trains it on "
            "the platform's human judgments",
        ),
        Checkpoint(
            "polos/reprod.ckpt",
            "the Polos README (github.com/keio-smilab24/Polos)",
            url="https://polos-polaris.s3.ap-northeast-1.amazonaws.com/reprod.zip",
            member="reprod.ckpt",
        ),
    )
}


def file_sha256(path: Path) -> str:
    """The weights' sha256, remembered beside the file (keyed by size and mtime) so a 1 GB
    checkpoint is hashed once, not at every metric sync."""
    stat = path.stat()
    sidecar = path.with_name(path.name + ".sha256")
    stamp = f"{stat.st_size} {stat.st_mtime_ns}"
    if sidecar.is_file():
        recorded = sidecar.read_text().split()
        if len(recorded) == 3 and " ".join(recorded[:2]) == stamp:
            return recorded[2]
    digest = files.file_sha256(path)
    with contextlib.suppress(OSError):  # a read-only store: hash again next time
        # The partial file's name ends in .sha256 too, so a folder hashed meanwhile leaves it out.
        files.atomic_write_text(sidecar, f"{stamp} {digest}\n", suffix=".sha256")
    return digest


def folder_sha256(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".sha256")):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def provisioned() -> list[tuple[str, bool, str]]:
    """(name, present, where) for every catalogue entry."""
    rows = []
    for name, entry in CATALOGUE.items():
        if isinstance(entry, OpenClipModel):
            weights = entry.weights()
            rows.append((name, weights is not None, str(weights or entry.folder)))
        elif isinstance(entry, HfModel):
            rows.append((name, entry.present(), str(entry.folder)))
        else:
            rows.append((name, entry.path.is_file(), str(entry.path)))
    return rows


def offline() -> None:
    """Nothing is fetched from a hub while scoring."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


Entry = TypeVar("Entry", OpenClipModel, HfModel, DiffusersPipeline, Checkpoint)


def entry(name: str, kind: type[Entry]) -> Entry:
    """The catalogue's entry of that name, which must be a `kind` (a typo or a wrong kind fails at import)."""
    found = CATALOGUE[name]
    if not isinstance(found, kind):
        raise TypeError(f"catalogue entry {name} is a {type(found).__name__}, not a {kind.__name__}")
    return found
