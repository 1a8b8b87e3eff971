"""A rating dataset flattened the way the published protocols score it: one row per judgment
(annotator), the caption's metric input repeated, the item as the bootstrap cluster."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capbench_eval.metrics import CaptionRow
from catalog.importers.bundle import CaptionKey, DatasetBundle


@dataclass
class JudgmentRows:
    rows: list[CaptionRow]
    human: np.ndarray
    items: list[str]
    captions: list[CaptionKey]  # the judged caption of each row
    annotators: list[str]


def judgment_rows(bundle: DatasetBundle, dimension: str | None = None) -> JudgmentRows:
    references = {item.external_id: tuple(item.references) for item in bundle.items}
    texts = {caption.key: caption.text for caption in bundle.captions}
    judgments = [j for j in bundle.judgments if dimension is None or j.dimension == dimension]
    return JudgmentRows(
        rows=[CaptionRow(str(i), texts[j.caption], references[j.caption.item]) for i, j in enumerate(judgments)],
        human=np.array([j.value for j in judgments]),
        items=[j.caption.item for j in judgments],
        captions=[j.caption for j in judgments],
        annotators=[j.annotator for j in judgments],
    )
