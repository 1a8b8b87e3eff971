"""`python -m capbench_eval ...`: the metric library without the platform, for GPU boxes and researchers.

    python -m capbench_eval metrics list
    python -m capbench_eval models list | fetch NAME
    python -m capbench_eval score --metric SLUG --input rows.jsonl --output scores.jsonl

Input lines: {"id": "...", "candidate": "...", "references": ["...", ...], "image": "optional path"}.
Output lines, in input order: {"id": "...", "score": <float>} (plus "detail" where the metric has one).
The input file is the corpus (CIDEr-D's document frequencies come from its references).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from capbench_eval import metrics
from capbench_eval.backbones.catalogue import provisioned
from capbench_eval.backbones.fetch import fetch
from capbench_eval.backbones.store import model_dir
from capbench_eval.errors import UnknownModel
from capbench_eval.files import atomic_path
from capbench_eval.metrics import CaptionRow, MetricUnavailable

BATCH = 2048


class InputError(ValueError):
    pass


def read_rows(path: Path) -> list[CaptionRow]:
    rows: list[CaptionRow] = []
    seen: set[str] = set()  # the ids read so far
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}, line {number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{where}: not valid UTF-8") from None
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as error:
                raise InputError(f"{where}: invalid JSON: {error.msg}") from None
            rows.append(_row(row, where, seen))
    return rows


def _row(row: object, where: str, seen: set[str]) -> CaptionRow:
    if not isinstance(row, dict):
        raise InputError(f"{where}: expected a JSON object")
    identifier, candidate = row.get("id"), row.get("candidate")
    references, image = row.get("references", []), row.get("image")
    if not isinstance(identifier, (str, int)) or isinstance(identifier, bool):
        raise InputError(f"{where}: field 'id': expected a string")
    if str(identifier) in seen:
        raise InputError(f"{where}: field 'id': {identifier!r} appears twice")
    seen.add(str(identifier))
    if not isinstance(candidate, str):
        raise InputError(f"{where}: field 'candidate': expected a string")
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        raise InputError(f"{where}: field 'references': expected a list of strings")
    if image is not None and not isinstance(image, str):
        raise InputError(f"{where}: field 'image': expected a path")
    return CaptionRow(id=str(identifier), candidate=candidate, references=tuple(references), media=image)


def progress(stream: TextIO, label: str, done: int, total: int, started: float) -> None:
    width = 30
    filled = width * done // max(total, 1)
    stream.write(
        f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} {time.perf_counter() - started:6.1f} s"
    )
    stream.flush()


def score_file(slug: str, source: Path, target: Path, stream: TextIO = sys.stderr) -> int:
    metric = metrics.get(slug)
    rows = read_rows(source)
    # Corpus-dependent metrics see the whole file at once; the others go in batches.
    size = len(rows) if metric.corpus_dependent else BATCH
    started, written = time.perf_counter(), 0
    with atomic_path(target) as partial, partial.open("w", encoding="utf-8") as out:  # in place once all is scored
        progress(stream, slug, 0, len(rows), started)
        for start in range(0, len(rows), max(size, 1)):
            batch = rows[start : start + size]
            result = metric.score(batch)
            for index, (row, value) in enumerate(zip(batch, result.scores, strict=True)):
                line = {"id": row.id, "score": value}
                if result.details:
                    line["detail"] = result.details[index]
                out.write(json.dumps(line) + "\n")
            written += len(batch)
            progress(stream, slug, written, len(rows), started)
    stream.write("\n")
    return written


def models_command(args: argparse.Namespace) -> int:
    if args.action == "list":
        print(f"model store: {model_dir()}")
        for name, present, where in provisioned():
            print(f"{name}\t{'provisioned' if present else 'missing'}\t{where}")
        return 0
    try:
        print(f"{args.name}: stored in {fetch(args.name)}")
    except (UnknownModel, RuntimeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m capbench_eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    metric_commands = commands.add_parser("metrics").add_subparsers(dest="action", required=True)
    metric_commands.add_parser("list", help="every registered metric and whether it can run here")
    model_commands = commands.add_parser("models").add_subparsers(dest="action", required=True)
    model_commands.add_parser("list", help="the model catalogue and what the local store holds")
    fetching = model_commands.add_parser("fetch", help="download a model into the store (needs network)")
    fetching.add_argument("name")
    score = commands.add_parser("score", help="score a JSONL file of rows")
    score.add_argument("--metric", required=True)
    score.add_argument("--input", required=True, type=Path)
    score.add_argument("--output", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.command == "models":
        return models_command(args)
    if args.command == "metrics":
        for slug in metrics.slugs():
            availability = metrics.get(slug).availability()
            print(f"{slug}\t{'available' if availability.available else 'unavailable: ' + availability.reason}")
        return 0
    try:
        written = score_file(args.metric, args.input, args.output)
    except (InputError, metrics.UnknownMetric, MetricUnavailable, ValueError) as error:
        print(f"error: {str(error).strip(chr(34))}", file=sys.stderr)
        return 2
    print(f"{args.metric}: wrote {written:,} scores to {args.output}", file=sys.stderr)
    return 0
