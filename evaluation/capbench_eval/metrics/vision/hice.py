"""HICE-S and RefHICE-S (seed 003, metrics.md §10): a global image–text score and a local one built
from the picture's regions and the caption's scene-graph phrases, each with Alpha-CLIP ViT-L/14.

    gITC = cos(C_v(I, whole), C_t(C));  f_I,n = C_v(I, A_n) for each segment mask A_n
    phrases = FACTUAL triplets of C, each read as a short sentence, f_C,m = C_t(phrase m)
    P = mean_m max_n s(f_I,n, f_C,m);  R = mean_n max_m s(f_I,n, f_C,m);  lITC = hMean(P, R)
    gTTC = cos(C_t(refs), C_t(C));  lTTC = hMean(P', R') over candidate vs reference triplets
    HICE-S = hMean(gITC, lITC);  RefHICE-S = hMean(gITC, lITC, gTTC, lTTC);  hMean = k / Σ 1/x

The authors' code is not public; where the paper is silent our choices are in `notes` and
`config()`. Each phrase's correctness (its best region) and each region's completeness (its best
phrase), with the mask boxes, are kept in the detail: the paper's interpretable evaluation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from capbench_eval import config
from capbench_eval.backbones.alpha_clip import AlphaClip, alpha_clip
from capbench_eval.backbones.catalogue import Checkpoint, HfModel, OpenClipModel, entry
from capbench_eval.backbones.features import media_sha256
from capbench_eval.backbones.scene_graph import SceneGraphParser, phrase, scene_graph_parser
from capbench_eval.backbones.segmenter import Segmenter, segmenter
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult
from capbench_eval.metrics.registry import register
from capbench_eval.metrics.vision.levels import harmonic_mean

if TYPE_CHECKING:
    pass

W = 2.5
Triplet = tuple[str, ...]
Picture = tuple[np.ndarray, list[list[float]]]  # features (whole picture first, then each region), region boxes
BACKBONE = entry("ViT-L-14-quickgelu/openai", OpenClipModel)
ALPHA = entry("alpha_clip/clip_l14_grit20m_fultune_2xe.pth", Checkpoint)
PROPOSER = entry("mobilesamv2/ObjectAwareModel.pt", Checkpoint)
SAM = entry("facebook/sam-vit-base", HfModel)
FACTUAL = entry("lizhuang144/flan-t5-base-VG-factual-sg", HfModel)


def image_text(cosines: np.ndarray) -> np.ndarray:
    """CLIP-S's rescaling of image–text cosines, w·max(cos, 0) with w = 2.5."""
    return W * np.maximum(cosines, 0.0)


def local_match(similarity: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """similarity[m, n] between phrase m and region (or reference phrase) n: precision = mean over
    phrases of their best match, recall = mean over regions of theirs; with each row's and column's best."""
    per_phrase, per_region = similarity.max(axis=1), similarity.max(axis=0)
    return float(per_phrase.mean()), float(per_region.mean()), per_phrase, per_region


class _Hice(Metric):
    family = "region"
    extra = "vision"
    uses_references = False
    citation = (
        "HICEScore: A Hierarchical Metric for Image Captioning Evaluation (Zeng et al., ACM MM 2024); code "
        "not released."
    )
    notes = (
        "Image–text cosines (global and each phrase–region pair) are rescaled as CLIP-S does, 2.5·max(cos, 0), "
        "before the maxima and harmonic means: the paper's values (0.5–0.6, local scores thresholded at 0.5) "
        "are not raw ViT-L/14 cosines. Text–text cosines (gTTC, lTTC) are raw, as RefCLIP-S's reference term.",
        "Alpha-CLIP ViT-L/14 from clip_l14_grit20m_fultune_2xe.pth (the Alpha-CLIP README's example); the "
        'text tower is OpenAI CLIP\'s. No "A photo depicts" prefix. Picture and mask are centre-cropped '
        "together, then resized.",
        "Regions: MobileSAMv2's object-aware YOLO boxes (conf 0.4, IoU 0.9, 1024 px) prompt SAM ViT-B through "
        "transformers (MobileSAMv2's EfficientViT encoder is not loadable by name); masks under 0.5% of the "
        "centre square Alpha-CLIP sees are dropped, then at most 32 kept. No region → the whole picture is the one region.",
        'Phrases: FACTUAL (flan-t5-base-VG-factual-sg) triplets, read as "subject predicate object" '
        '(attributes as "dog is brown"), a lone entity as itself; each sentence parsed on its own. No triplet → '
        "the caption itself is the one phrase.",
        "RefHICE-S: gTTC is the best raw cosine over the references (as RefCLIP-S); lTTC compares the "
        "candidate's triplets with the union of the references' triplets.",
    )

    def parts(self) -> tuple[AlphaClip, Segmenter, SceneGraphParser]:
        confidence = config.env.hice_proposer_conf
        return (alpha_clip(BACKBONE, ALPHA), segmenter(PROPOSER, SAM, confidence), scene_graph_parser(FACTUAL))

    def unavailable_reason(self) -> str | None:
        return next((reason for part in self.parts() if (reason := part.unavailable_reason())), None)

    def config(self) -> dict:
        encoder, regions, parser = self.parts()
        return {
            "alpha_clip": encoder.fingerprint(),
            "segmenter": regions.fingerprint(),
            "segmenter_settings": regions.settings(),
            "parser": parser.fingerprint(),
            "w": W,
            "references": self.uses_references,
        }

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        self.require_available()
        encoder, regions, parser = self.parts()
        scores = [math.nan] * len(rows)
        details: list[dict] = [{} for _ in rows]
        kept: list[int] = []
        media: list[str] = []  # each kept row's picture
        for i, row in enumerate(rows):
            if not row.media:
                details[i]["error"] = "this caption's item has no image attached"
            elif self.uses_references and not row.references:
                details[i]["error"] = f"{self.name} needs at least one reference"
            else:
                kept.append(i)
                media.append(row.media)
        if not kept:
            return MetricResult(scores=scores, corpus=None, details=details)
        pictures = self._pictures(media, encoder, regions)
        candidate_triplets = parser.parse([rows[i].candidate for i in kept])
        reference_triplets: list[list[Triplet]] | list[None] = (
            [[t for ref in tree for t in ref] for tree in (parser.parse(list(rows[i].references)) for i in kept)]
            if self.uses_references
            else [None] * len(kept)
        )
        for i, path, triplets, ref_triplets in zip(kept, media, candidate_triplets, reference_triplets, strict=True):
            scores[i], details[i] = self._one(rows[i], pictures[path], triplets, ref_triplets, encoder)
        values = [s for s in scores if not math.isnan(s)]
        return MetricResult(scores=scores, corpus=sum(values) / len(values) if values else None, details=details)

    @staticmethod
    def _pictures(media: list[str], encoder: AlphaClip, regions: Segmenter) -> dict[str, Picture]:
        """Per distinct picture: its features (whole picture first, then each region) and region boxes."""
        from PIL import Image  # here: importing the library must not need Pillow

        out: dict[str, Picture] = {}
        by_content: dict[str, Picture] = {}
        for path in dict.fromkeys(media):
            sha = media_sha256(path)
            if sha not in by_content:
                with Image.open(path) as opened:
                    picture = opened.convert("RGB")
                found = regions.regions(picture)
                whole = np.ones((picture.size[1], picture.size[0]), dtype=bool)
                by_content[sha] = (encoder.encode_regions(picture, [whole, *found.masks]), found.boxes)
            out[path] = by_content[sha]
        return out

    def _one(
        self,
        row: CaptionRow,
        picture: Picture,
        triplets: list[Triplet],
        reference_triplets: list[Triplet] | None,
        encoder: AlphaClip,
    ) -> tuple[float, dict]:
        features, boxes = picture
        phrases = [phrase(t) for t in triplets] or [row.candidate]
        texts = encoder.encode_texts([row.candidate, *phrases])
        global_itc = float(image_text(features[0] @ texts[0]))
        region_features = features[1:] if len(features) > 1 else features[:1]
        similarity = image_text(texts[1:] @ region_features.T)
        precision, recall, per_phrase, per_region = local_match(similarity)
        local_itc = harmonic_mean([precision, recall])
        region_boxes: Sequence[list[float] | None] = boxes or [None]  # no region: the whole picture, no box
        detail: dict[str, object] = {
            "global_itc": global_itc,
            "local_itc": local_itc,
            "precision": precision,
            "recall": recall,
            "phrases": [
                {"text": text, "correctness": round(float(v), 4)} for text, v in zip(phrases, per_phrase, strict=True)
            ],
            "regions": [
                {"box": box, "completeness": round(float(v), 4)}
                for box, v in zip(region_boxes, per_region, strict=True)
            ],
        }
        parts = [global_itc, local_itc]
        if reference_triplets is not None:
            references = encoder.encode_texts(list(row.references))
            global_ttc = float((references @ texts[0]).max())
            ref_phrases = list(dict.fromkeys(phrase(t) for t in reference_triplets)) or list(row.references)
            ref_texts = encoder.encode_texts(ref_phrases)
            p, r, _, _ = local_match(texts[1:] @ ref_texts.T)
            local_ttc = harmonic_mean([p, r])
            detail.update({"global_ttc": global_ttc, "local_ttc": local_ttc, "reference_phrases": ref_phrases})
            parts += [global_ttc, local_ttc]
        return harmonic_mean(parts), detail


@register("hice_s")
class HiceScore(_Hice):
    slug, name = "hice_s", "HICE-S"
    needs = frozenset({"media", "gpu"})
    description = "Harmonic mean of a global Alpha-CLIP image–caption score and a local region–phrase score."


@register("ref_hice_s")
class RefHiceScore(_Hice):
    slug, name = "ref_hice_s", "RefHICE-S"
    needs = frozenset({"media", "references", "gpu"})
    uses_references = True
    description = "HICE-S with the global and local text–text scores against the references, four-way harmonic mean."
