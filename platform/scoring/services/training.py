"""Training a metric's learned part on the platform's human judgments: CAMScore's fusion. Items are
split by a fixed rule (a hash of dataset and item id: 60% train, 20% validation, 20% test), the
fusion is fitted on one split and stopped early on validation, and the checkpoint records the
dataset, its content hash, the split rule and the counts, so the metric's configuration (and its
page) says what it has seen."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from django.db.models import Avg

from capbench_eval.metrics import get
from capbench_eval.metrics.vision.camscore import FUSION, CamScore
from capbench_eval.metrics.vision.fusion import LEVELS, fusion_inputs, save_fusion, train_fusion
from catalog.models import Caption, Dataset
from scoring.services.metrics import metrics_sync
from scoring.services.rows import caption_rows

SPLIT_RULE = "sha256(dataset slug/item id): first 8 hex digits / 16^8 < 0.6 train, < 0.8 validation, else test"
SPLITS = ("train", "validation", "test")


def item_split(dataset_slug: str, external_id: str) -> str:
    share = int(hashlib.sha256(f"{dataset_slug}/{external_id}".encode()).hexdigest()[:8], 16) / 16**8
    return "train" if share < 0.6 else "validation" if share < 0.8 else "test"


@dataclass
class TrainingOutcome:
    path: str
    record: dict
    best_tau: float
    best_epoch: int
    epochs: int


def human_targets(dataset: Dataset, split: str) -> tuple[list[int], np.ndarray]:
    """The dataset's own candidate captions in `split` with their mean human score on the first
    dimension, rescaled to [0, 1] by the dataset's rating scale."""
    if dataset.kind != Dataset.Kind.RATING or not dataset.dimensions:
        raise ValueError(f"{dataset.slug} has no human ratings to train on (it is a {dataset.kind} dataset)")
    low, high = dataset.rating_scale.get("min"), dataset.rating_scale.get("max")
    if low is None or high is None or high <= low:
        raise ValueError(f"{dataset.slug} has no rating scale (min, max) to rescale its ratings with")
    rated = (
        Caption.objects.own()
        .filter(item__dataset=dataset, judgments__dimension=dataset.dimensions[0])
        .annotate(human=Avg("judgments__value"))
        .values_list("pk", "human", "item__external_id")
        .order_by("pk")
    )
    chosen = [(pk, human) for pk, human, item in rated if item_split(dataset.slug, item) == split]
    return [pk for pk, _ in chosen], np.array([(h - low) / (high - low) for _, h in chosen], dtype=np.float32)


def camscore_train(
    *,
    dataset: Dataset,
    split: str = "train",
    validation: str = "validation",
    hidden: int = 32,
    lr: float = 3e-5,
    max_epochs: int = 2000,
    patience: int = 100,
    seed: int = 0,
    progress=lambda text: None,
) -> TrainingOutcome:
    """Levels of every caption of the two splits (generated pictures are cached), the fusion fitted
    and saved where CAMScore loads it; then the registry is synced, so CAMScore gets a new version."""
    if split == validation or {split, validation} - set(SPLITS):
        raise ValueError(f"train and validation splits must be two different ones of {', '.join(SPLITS)}")
    metric = get("camscore")
    if not isinstance(metric, CamScore):
        raise TypeError(f"the registry's camscore is a {type(metric).__name__}, not CamScore")
    sets = {}
    for name in (split, validation):
        ids, targets = human_targets(dataset, name)
        if not ids:
            raise ValueError(f"{dataset.slug} has no rated captions in its {name} split")
        progress(f"{name}: computing CAMScore's levels for {len(ids):,} captions")
        kept, details = metric.levels([job_row.row for job_row in caption_rows(ids)])
        sets[name] = (
            fusion_inputs([{level: details[i][level] for level in LEVELS} for i in kept]),
            targets[kept],
            len(kept),
            len(ids) - len(kept),
        )
    (train_x, train_y, train_n, train_left), (val_x, val_y, val_n, val_left) = sets[split], sets[validation]
    progress(f"training on {train_n:,} captions, stopping early on {val_n:,}")
    state, report = train_fusion(
        train_x, train_y, val_x, val_y, hidden=hidden, lr=lr, max_epochs=max_epochs, patience=patience, seed=seed
    )
    record = {
        "dataset": dataset.slug,
        "content_sha256": dataset.content_sha256,
        "dimension": dataset.dimensions[0],
        "split": split,
        "validation": validation,
        "split_rule": SPLIT_RULE,
        "train_captions": train_n,
        "validation_captions": val_n,
        "left_out_without_picture": train_left + val_left,
        "validation_tau_b": round(report.best_tau, 6),
        "best_epoch": report.best_epoch,
        "lr": lr,
        "hidden": hidden,
        "seed": seed,
    }
    path = FUSION.path
    save_fusion(path, state, hidden, record)
    metrics_sync()
    return TrainingOutcome(str(path), record, report.best_tau, report.best_epoch, report.epochs)
