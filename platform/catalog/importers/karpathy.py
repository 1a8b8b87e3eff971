"""Karpathy splits (`dataset_coco.json`, `dataset_flickr30k.json`, `dataset_flickr8k.json`): the
image/caption files with the train/val/test partition that captioning papers report on. One split is
imported as one captioner benchmark (default: test).

Item external id, as captioning results files name the image: COCO's integer `cocoid` (a string
here), Flickr's file name without its extension (`1000092795` for `1000092795.jpg`). Media is the
bare `filename`, the name `datasets media attach` matches in an image folder (COCO's `filepath`,
`val2014`/`train2014`, is dropped: folders do not matter there). References are the sentences'
`raw` texts, whitespace-normalised; the `tokens` (lower-cased, punctuation removed) are dropped."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.importers.bundle import DatasetBundle, DatasetInfo, ItemRow, MediaRow, normalise_whitespace
from catalog.importers.errors import ImportFormatError
from catalog.importers.media_urls import coco_image_url
from catalog.importers.sources import json_document, parse_int, parse_text, require_object, source_file

FORMAT = "karpathy"
DEFAULT_FILE = "dataset_coco.json"
DEFAULT_MANIFEST = None
SPLITS = ("test", "val", "train", "restval")
DEFAULT_SPLIT = "test"


@dataclass(frozen=True)
class Corpus:
    slug: str
    title: str
    description: str
    citation: str
    licence: str


KARPATHY = "A. Karpathy and L. Fei-Fei (2015). Deep Visual-Semantic Alignments for Generating Image Descriptions. CVPR."
CORPORA = {
    "coco": Corpus(
        slug="coco",
        title="COCO Captions",
        description=(
            "Microsoft COCO 2014 images with five or more captions each, in Karpathy's partition of the "
            "2014 train and validation images: 82,783 train, 30,504 restval, 5,000 val, 5,000 test."
        ),
        citation=(
            f"{KARPATHY} X. Chen et al. (2015). Microsoft COCO Captions: Data Collection and Evaluation "
            "Server. arXiv:1504.00325."
        ),
        licence=(
            "split file: no licence stated (research use); captions CC BY 4.0 (COCO Consortium); images "
            "under their own Flickr licences"
        ),
    ),
    "flickr30k": Corpus(
        slug="flickr30k",
        title="Flickr30k",
        description=(
            "31,014 Flickr photographs of people and everyday activities, five captions each, in "
            "Karpathy's partition: 29,000 train, 1,014 val, 1,000 test."
        ),
        citation=(
            f"{KARPATHY} P. Young, A. Lai, M. Hodosh and J. Hockenmaier (2014). From image descriptions "
            "to visual denotations. TACL."
        ),
        licence=(
            "split file: no licence stated (research use); captions: Flickr30k terms (non-commercial "
            "research); images under Flickr terms"
        ),
    ),
    "flickr8k": Corpus(
        slug="flickr8k",
        title="Flickr8k",
        description=(
            "8,000 Flickr photographs, five captions each, in the partition the split file gives "
            "(Flickr8k's own: 6,000 train, 1,000 val, 1,000 test)."
        ),
        citation=(
            f"{KARPATHY} M. Hodosh, P. Young and J. Hockenmaier (2013). Framing Image Description as a "
            "Ranking Task: Data, Models and Evaluation Metrics. JAIR."
        ),
        licence=(
            "split file: no licence stated (research use); captions: Flickr8k research licence "
            "(non-commercial); images under Flickr terms"
        ),
    ),
}


@dataclass(frozen=True)
class _Image:
    split: str
    external_id: str
    filename: str
    references: list[str]


def parse(path: Path, *, split: str = DEFAULT_SPLIT) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    document = require_object(json_document(source), path=source, line=None)
    for key in ("dataset", "images"):
        if key not in document:
            raise ImportFormatError(source, None, key, "missing (not a Karpathy split file)")
    name = document["dataset"]
    if name not in CORPORA:
        raise ImportFormatError(source, None, "dataset", f"expected one of {', '.join(CORPORA)}, found {name!r}")
    if not isinstance(document["images"], list):
        raise ImportFormatError(source, None, "images", f"expected a list, found {type(document['images']).__name__}")
    images = _images(document["images"], name, source)
    chosen = [image for image in images if image.split == split]
    if not chosen:
        present = Counter(image.split for image in images)
        listed = ", ".join(f"{key} {count:,}" for key, count in sorted(present.items())) or "none"
        raise ImportFormatError(source, None, "split", f"no image has split {split!r} (this file has: {listed})")
    bundle = DatasetBundle(info=_info(CORPORA[name], split))
    bundle.items = [ItemRow(external_id=i.external_id, media=i.filename, references=i.references) for i in chosen]
    bundle.media = [MediaRow(name=image.filename, kind="image", url=coco_image_url(image.filename)) for image in chosen]
    bundle.report["images_in_other_splits"] = len(images) - len(chosen)
    return bundle


def _images(raw_images: list[Any], name: str, source: Path) -> list[_Image]:
    """Every image of the file (all splits are checked, one is kept), with unique ids and names."""
    images: list[_Image] = []
    by_id: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for index, raw in enumerate(raw_images):
        where = f"images[{index}]"
        entry = require_object(raw, path=source, line=None, field=where)
        for key in ("split", "filename", "sentences", *(("cocoid",) if name == "coco" else ())):
            if key not in entry:
                raise ImportFormatError(source, None, f"{where}.{key}", "missing")
        split = entry["split"]
        if split not in SPLITS:
            raise ImportFormatError(
                source, None, f"{where}.split", f"expected one of {', '.join(SPLITS)}, found {split!r}"
            )
        filename = parse_text(entry["filename"], path=source, line=None, field=f"{where}.filename")
        if filename != filename.strip() or "/" in filename or "\\" in filename:
            raise ImportFormatError(source, None, f"{where}.filename", f"expected a bare file name, found {filename!r}")
        if name == "coco":
            external_id = str(parse_int(entry["cocoid"], path=source, line=None, field=f"{where}.cocoid", low=0))
        else:
            external_id = Path(filename).stem
        for seen, value, field in ((by_id, external_id, "cocoid" if name == "coco" else "filename"),
                                   (by_name, filename, "filename")):  # fmt: skip
            if value in seen:
                raise ImportFormatError(source, None, f"{where}.{field}", f"{value!r} also at {seen[value]}")
            seen[value] = where
        images.append(_Image(split, external_id, filename, _references(entry["sentences"], source, where)))
    return images


def _references(raw: Any, source: Path, where: str) -> list[str]:
    if not isinstance(raw, list):
        raise ImportFormatError(source, None, f"{where}.sentences", f"expected a list, found {type(raw).__name__}")
    if not raw:
        raise ImportFormatError(source, None, f"{where}.sentences", "empty: a benchmark item needs references")
    references = []
    for index, sentence in enumerate(raw):
        place = f"{where}.sentences[{index}]"
        entry = require_object(sentence, path=source, line=None, field=place)
        if "raw" not in entry:
            raise ImportFormatError(source, None, f"{place}.raw", "missing")
        references.append(normalise_whitespace(parse_text(entry["raw"], path=source, line=None, field=f"{place}.raw")))
    return references


def _info(corpus: Corpus, split: str) -> DatasetInfo:
    return DatasetInfo(
        slug=f"{corpus.slug}-karpathy-{split}",
        title=f"{corpus.title} (Karpathy {split} split)",
        source_format=FORMAT,
        modality="image",
        kind="benchmark",
        dimensions=[],
        rating_scale={},
        description=f"{corpus.description} This dataset is the {split} split. Submit one caption per image.",
        citation=corpus.citation,
        licence=corpus.licence,
        url="https://cs.stanford.edu/people/karpathy/deepimagesent/",
        protocol_version="karpathy-1",
        protocol_notes=(
            f"The images whose split is {split!r}, in file order. External id: "
            + ("the cocoid as a string" if corpus.slug == "coco" else "the file name without extension")
            + "; media: the bare filename (filepath dropped); references: sentences[].raw in file order, "
            "whitespace-normalised. Dropped: tokens, imgid, sentid(s), other splits."
        ),
    )
