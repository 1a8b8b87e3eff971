"""lmms-eval's per-sample output (`--log_samples`) of its captioning tasks, read as a results file.

The format, as lmms-eval writes it (docs/client.md, "lmms-eval's samples"): one JSON object a line
per document of the task's split, `{datetime}_samples_{task}.jsonl`, with
- `doc_id`: the document's index in lmms-eval's copy of the split (not the dataset's own id);
- `filtered_resps`: the model's response after lmms-eval's filters, the text it scores: a list with
  one string per request (`["a dog runs"]`), or, in later releases, the string itself; `resps` the
  raw response (`[["a dog runs"]]`), left out when it equals `filtered_resps`;
- `target`, `input`, `doc_hash`, … and the task's per-sample records: the captioning tasks (COCO
  2014/2017 and Karpathy, nocaps, Flickr30k) write one object per metric (`coco_CIDEr`,
  `nocaps_Bleu_4`, `flickr_METEOR`, …; on a test split `coco_passthrough`, …) holding `image_id`,
  `pred` and, on a split with references, `answer` (the image's reference captions). Earlier
  releases also kept the document (`doc`) less its image fields, e.g. `filename`, `question_id`.

A sample is mapped to the dataset's item by (1) its references (`answer`), when the dataset's are
public and exactly one item has the same set: what Flickr30k needs, whose lmms-eval `image_id` is
the Karpathy split's running `imgid`, not the photo's file name; else (2) its `image_id` as the
item's id (COCO's and nocaps' image ids are CapBench's item ids) or the image's file name; else
(3) the document's file name. Never by `doc_id`'s position: it counts lmms-eval's copy of the split
(Flickr30k's is all 31,783 images), so a position would pair captions with the wrong images without
a word. A sample none of these maps is an error naming its line, its doc_id and its id."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from capbench_client.problems import FileProblems

DOC_NAMES = ("filename", "file_name", "question_id")  # a kept `doc`'s fields that name the image file


@dataclass(frozen=True)
class Sample:
    """One line of a samples file, as much as a captioning task's line tells."""

    line: int
    doc_id: object
    caption: str | None
    image_id: str | None  # the per-sample records' image_id, as text
    names: tuple[str, ...]  # file names a kept `doc` gives
    references: tuple[str, ...]  # the records' `answer`, when given

    @property
    def where(self) -> str:
        return f"line {self.line} (doc_id {self.doc_id})" if self.doc_id is not None else f"line {self.line}"


def looks_like_samples(first: object) -> bool:
    """Whether a file's first JSON object is an lmms-eval sample (doc_id and a response), not a
    results line (image_id, caption)."""
    return (
        isinstance(first, dict)
        and "doc_id" in first
        and ("filtered_resps" in first or "resps" in first)
        and "caption" not in first
    )


def read_samples(path: Path, problems: FileProblems) -> list[Sample]:
    """Every sample of the file; each unreadable line is added to `problems`."""
    samples = []
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line.removeprefix(b"\xef\xbb\xbf") if number == 1 else line)
            except ValueError as error:  # UnicodeDecodeError too
                problems.add(f"line {number}: not JSON ({error})")
                continue
            if not isinstance(raw, dict):
                problems.add(f"line {number}: expected an lmms-eval sample (an object with doc_id, filtered_resps)")
                continue
            samples.append(sample(number, raw))
    return samples


def sample(line: int, raw: dict) -> Sample:
    records = [value for value in raw.values() if isinstance(value, dict) and "image_id" in value]
    image_id = next((_text(record["image_id"]) for record in records if _text(record["image_id"])), None)
    answers = next((record["answer"] for record in records if _captions(record.get("answer"))), ())
    kept = raw.get("doc")
    doc: dict = kept if isinstance(kept, dict) else {}
    names = tuple(str(doc[key]) for key in DOC_NAMES if isinstance(doc.get(key), str | int) and str(doc[key]))
    return Sample(line, raw.get("doc_id"), response(raw), image_id, names, tuple(answers))


def response(raw: dict) -> str | None:
    """The model's response as lmms-eval scored it: `filtered_resps`' first text, else `resps`'."""
    for key in ("filtered_resps", "resps"):
        text = _first_text(raw.get(key))
        if text is not None:
            return text
    return None


def _first_text(value: object) -> str | None:
    while isinstance(value, list) and value:  # [text], [[text]]: one request, its first response
        value = value[0]
    return value if isinstance(value, str) else None


def _text(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value).strip() or None


def _captions(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(text, str) for text in value)
