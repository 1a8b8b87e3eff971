"""`capbench`: sign in, submit a results file (or lmms-eval's samples) and watch it scored, read
results, boards and scores, download candidates and upload a metric's scores, download a dataset's
references and score a results file on this machine (docs/client.md has an example of each).

The server is `--url`, else $CAPBENCH_URL, else the saved one (`capbench login`), else
http://127.0.0.1:8000; the token `--token`, else $CAPBENCH_TOKEN, else the saved one when the server
is the one it was saved for. An error is one message (and the server's located problems, one a
line) on stderr and exit status 1; never a traceback."""

from __future__ import annotations

import argparse
import csv
import getpass
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from capbench_client import config, local
from capbench_client.api import Client
from capbench_client.errors import CapBenchError, Conflict, NotFound, WaitTimedOut
from capbench_client.problems import FileError
from capbench_client.progress import ProgressDisplay
from capbench_client.references import ReferenceSet, reference_set
from capbench_client.results import FORMATS, Matched, matched_results, results_format
from capbench_client.tables import board_text, progress_text, results_text, table
from capbench_client.terminal import SafeBytes, SafeText, shown
from capbench_client.version import VERSION

DEFAULT_URL = "http://127.0.0.1:8000"
PROGRAM = "capbench"
SKIP_HELP = "leave out (and count) lines whose image is not the dataset's (lmms-eval's Flickr30k runs all 31,783)"


class Failed(Exception):
    """A command's own refusal (a bad argument, a failed submission): its message, exit status 1."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (0 when it did what was asked)."""
    args = parser().parse_args(argv)
    try:
        return int(args.command(args) or 0)
    except CapBenchError as error:
        return _fail(str(error))
    except Failed as error:
        return _fail(str(error))
    except (OSError, ValueError) as error:  # an unreadable or unwritable file, a bad --url
        if isinstance(error, BrokenPipeError):  # `capbench scores | head`
            return 0
        return _fail(_file_problem(error))
    except EOFError:  # stdin closed before a username or password
        return _fail("no answer on the terminal or stdin")
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog=PROGRAM, description="The CapBench command line: submit, wait, read results.")
    top.add_argument("--version", action="version", version=f"capbench-client {VERSION}")
    top.add_argument("--url", help=f"the server (default: $CAPBENCH_URL, the saved one, else {DEFAULT_URL})")
    top.add_argument("--token", help="an API token (default: $CAPBENCH_TOKEN, else the saved one)")
    top.add_argument(
        "--retries", type=int, default=4, metavar="N", help="retries of a request refused as busy or unanswered (4)"
    )
    commands = top.add_subparsers(title="commands", metavar="COMMAND", required=True)

    def command(name: str, run: Callable[[argparse.Namespace], int | None], text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(command=run)
        return sub

    login = command("login", _login, "sign in and save the API token (readable by you only)")
    login.add_argument("--username", help="the account's name (asked for when not given)")
    command("logout", _logout, "forget the saved token")

    submit = command(
        "submit",
        _submit,
        "upload a results file (JSON, JSON Lines or CSV of image_id, caption; or lmms-eval's samples)",
    )
    submit.add_argument("dataset", help="the dataset's slug")
    submit.add_argument("file", type=Path, help="the results file")
    submit.add_argument("--name", help="the method's name (default: the file's name without its extension)")
    submit.add_argument("--description", default="")
    submit.add_argument("--paper-url", default="")
    submit.add_argument("--code-url", default="")
    submit.add_argument("--metric", action="append", default=[], help="a metric to score (repeat; default: all)")
    submit.add_argument("--public", action="store_true", help="show it on the public board")
    submit.add_argument("--wait", action="store_true", help="show the progress, then the results")
    submit.add_argument("--timeout", type=float, metavar="SECONDS", help="with --wait: give up waiting after this long")
    submit.add_argument("--poll", type=float, default=2.0, help=argparse.SUPPRESS)
    submit.add_argument(
        "--format",
        choices=["auto", "lmms-eval"],
        default="auto",
        help="lmms-eval: lmms-eval's --log_samples output, mapped to the dataset's images here (auto: "
        "when the file is one; else uploaded as it is)",
    )
    submit.add_argument(
        "--references",
        type=Path,
        metavar="FILE",
        help="with lmms-eval: the dataset's references file (default: downloaded)",
    )
    submit.add_argument("--skip-unmatched", action="store_true", help=SKIP_HELP)

    results = command("results", _results, "a submission's results: value, 95%% interval and rank per metric")
    results.add_argument("submission", type=int)
    results.add_argument("--json", action="store_true", help="the server's JSON")

    board = command("board", _board, "a dataset's captioner leaderboard")
    board.add_argument("dataset")
    board.add_argument("--csv", action="store_true", help="the whole board as CSV")
    board.add_argument("--json", action="store_true", help="the whole board as the server's JSON")
    board.add_argument("--sort", metavar="METRIC", help="rank by this metric (default: the headline metric)")
    board.add_argument("--order", choices=["asc", "desc"])
    board.add_argument("--domain", help="a subset of the images (nocaps: in-domain, near-domain, out-domain)")
    board.add_argument("--output", type=Path, help="write to this file (default: stdout)")

    scores = command("scores", _scores, "per-caption scores, every page")
    scores.add_argument("--dataset")
    scores.add_argument("--system")
    scores.add_argument("--metric")
    scores.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    scores.add_argument("--page-size", type=int, help="rows per request (the server's default: 500; at most 5000)")
    scores.add_argument("--output", type=Path, help="write to this file (default: stdout)")

    candidates = command("candidates", _candidates, "a meta-evaluation dataset's candidates, to score them")
    candidates.add_argument("dataset")
    candidates.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    candidates.add_argument("--output", type=Path, help="write to this file (default: stdout)")

    upload = command("metric-upload", _metric_upload, "upload a metric's scores (caption_id, score) per dataset")
    upload.add_argument("name", help="the metric's name (the same name again: a new version)")
    upload.add_argument(
        "--scores", action="append", required=True, metavar="DATASET=FILE", help="a dataset's scores file (repeat)"
    )
    upload.add_argument("--description", default="")
    upload.add_argument("--paper-url", default="")
    upload.add_argument("--code-url", default="")
    upload.add_argument("--lower-is-better", action="store_true")
    upload.add_argument("--reference-free", action="store_true")
    upload.add_argument("--public", action="store_true")

    references = command(
        "references", _references, "a dataset's items in order with their references, to score locally"
    )
    references.add_argument("dataset")
    references.add_argument("-o", "--output", type=Path, help="write to this file (default: stdout)")

    evaluate = command(
        "eval", _eval, "score a results file here with capbench-eval: the board's numbers and signatures"
    )
    evaluate.add_argument("dataset", help="the dataset's slug")
    evaluate.add_argument("file", type=Path, help="the results file (the formats submit takes, or lmms-eval's samples)")
    evaluate.add_argument(
        "--metric", action="append", required=True, metavar="SLUG[,SLUG]", help="the metrics to score (repeat)"
    )
    evaluate.add_argument(
        "--references", type=Path, metavar="FILE", help="the dataset's references file (default: downloaded)"
    )
    evaluate.add_argument("--format", choices=FORMATS, default="auto", help="the results file's format (auto)")
    evaluate.add_argument("--media", type=Path, metavar="DIR", help="the dataset's images, for metrics that look")
    evaluate.add_argument("--skip-unmatched", action="store_true", help=SKIP_HELP)
    evaluate.add_argument("--json", action="store_true", help="the numbers as JSON")

    command("datasets", _datasets, "the datasets")
    command("metrics", _metrics, "the metrics")
    return top


# Where and as whom


def _client(args: argparse.Namespace, *, token: bool = True) -> Client:
    saved = config.load()
    url = args.url or os.environ.get("CAPBENCH_URL") or saved.get("url") or DEFAULT_URL
    key = args.token or os.environ.get("CAPBENCH_TOKEN")
    if not key and saved.get("token") and _same_server(saved.get("url", ""), url):
        key = saved["token"]  # a saved token goes only to the server it came from
        if token and config.too_open():
            sys.stderr.write(
                f"{PROGRAM}: warning: {config.config_path()} can be read by others; "
                "`capbench login` again writes it readable by you only\n"
            )
    return Client(url, key if token else None, attempts=1 + max(0, args.retries), on_retry=_retrying)


def _same_server(one: str, other: str) -> bool:
    return one.rstrip("/") == other.rstrip("/")


def _retrying(attempt: int, seconds: float, why: str) -> None:
    sys.stderr.write(f"{PROGRAM}: {shown(why)}; trying again in {seconds:.0f} s (attempt {attempt + 1})\n")


# Commands


def _login(args: argparse.Namespace) -> int:
    client = _client(args, token=False)
    interactive = sys.stdin.isatty()
    username = args.username or (input("Username: ") if interactive else sys.stdin.readline()).strip()
    if not username:
        raise Failed("no username given (--username)")
    password = getpass.getpass("Password: ") if interactive else sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise Failed("no password given (on the terminal, or one line on stdin)")
    token = client.token_login(username, password)
    path = config.save({"url": client.url, "token": token})
    print(f"Signed in to {client.url} as {username}; the token is saved in {path} (readable by you only).")
    return 0


def _logout(args: argparse.Namespace) -> int:
    path = config.config_path()
    print(f"Removed {path}." if config.remove(path) else f"Nothing saved ({path} does not exist).")
    return 0


def _submit(args: argparse.Namespace) -> int:
    client = _client(args)
    file: Path = args.file
    if not file.is_file():
        raise Failed(f"{file}: no such file")
    with tempfile.TemporaryDirectory(prefix="capbench-") as folder:
        upload = file
        if results_format(file, args.format) == "lmms-eval":
            upload = _lmms_eval_results(client, args, Path(folder))
        return _upload(client, args, upload)


def _lmms_eval_results(client: Client, args: argparse.Namespace, folder: Path) -> Path:
    """lmms-eval's samples mapped to the dataset's images, as a results file in `folder`; nothing
    is submitted when a sample maps to no image, or an image has no sample."""
    file: Path = args.file
    try:
        matched = matched_results(file, _references_of(client, args), "lmms-eval", skip_unmatched=args.skip_unmatched)
    except FileError as error:
        raise Failed(f"{error}\nnothing was submitted") from None
    _say_skipped(matched, file)
    if matched.missing:
        raise Failed(
            f"{file.name}: {_missing_words(matched)}; a submission gives one caption per image (did lmms-eval "
            "run with --limit?): nothing was submitted"
        )
    converted = folder / f"{file.stem}.json"
    converted.write_bytes(matched.results_json())
    print(
        f"{len(matched.captions):,} lmms-eval samples of {file.name} matched to the dataset's images.", file=sys.stderr
    )
    return converted


def _upload(client: Client, args: argparse.Namespace, file: Path) -> int:
    try:
        submission = client.submit(
            args.dataset,
            file,
            method_name=args.name or args.file.stem,
            description=args.description,
            paper_url=args.paper_url,
            code_url=args.code_url,
            metrics=args.metric,
            public=args.public,
        )
    except Conflict as error:
        known = f" as submission {error.submission}" if error.submission else ""
        raise Failed(f"this file was already submitted{known}: {error.page or error.message}") from None
    number = submission["id"]
    _say(f"Submission {number} ({submission.get('status', 'queued')}): {client.url}/submissions/{number}/")
    if not args.wait:
        return 0
    display = ProgressDisplay(sys.stderr)
    try:
        state = client.wait(number, poll=args.poll, timeout=args.timeout, on_progress=display)
    except WaitTimedOut as error:
        raise Failed(f"{error.message}; it goes on: `capbench results {number}` later") from None
    finally:
        display.close()
    try:
        _say(results_text(client.results(number)))
    except NotFound:  # a server older than the results card
        _say(progress_text(state))
    if state.get("status") != "done":
        raise Failed(f"submission {number} {state.get('status')}: {state.get('error') or 'see the metrics above'}")
    return 0


def _results(args: argparse.Namespace) -> int:
    card = _client(args).results(args.submission)
    _say(json.dumps(card, indent=2) if args.json else results_text(card))
    return 0


def _board(args: argparse.Namespace) -> int:
    client = _client(args)
    query = {"sort": args.sort, "order": args.order, "domain": args.domain}
    if args.csv:
        text = client.board_csv(args.dataset, **query)
    else:
        board = client.board(args.dataset, **query)
        text = json.dumps(board, indent=2) + "\n" if args.json else board_text(board) + "\n"
    with _opened(args.output) as out:
        out.write(text)
    if args.output:
        print(f"Wrote {args.output}.", file=sys.stderr)
    return 0


def _scores(args: argparse.Namespace) -> int:
    if args.page_size is not None and args.page_size < 1:
        raise Failed("--page-size: a whole number from 1")
    rows = _client(args).scores(dataset=args.dataset, system=args.system, metric=args.metric, page_size=args.page_size)
    with _opened(args.output) as out:
        count = _write_rows(rows, out, args.format)
    print(f"{count:,} scores{f' written to {args.output}' if args.output else ''}.", file=sys.stderr)
    return 0


def _candidates(args: argparse.Namespace) -> int:
    return _download(_client(args).candidates(args.dataset, args.format), args.output)


def _download(chunks: Iterable[bytes], output: Path | None) -> int:
    """A download's bytes to `output` (or standard output), its size said on standard error."""
    size = 0
    with _opened_binary(output) as out:
        for chunk in chunks:
            out.write(chunk)
            size += len(chunk)
    if output:
        print(f"Wrote {size:,} bytes to {output}.", file=sys.stderr)
    return 0


def _metric_upload(args: argparse.Namespace) -> int:
    files: dict[str, Path] = {}
    for given in args.scores:
        dataset, sep, name = given.partition("=")
        if not sep or not dataset or not name:
            raise Failed(f"--scores {given}: write it DATASET=FILE")
        if not Path(name).is_file():
            raise Failed(f"{name}: no such file")
        files[dataset] = Path(name)
    client = _client(args)
    submission = client.upload_metric_scores(
        args.name,
        files,
        description=args.description,
        paper_url=args.paper_url,
        code_url=args.code_url,
        lower_is_better=args.lower_is_better,
        reference_free=args.reference_free,
        public=args.public,
    )
    slug = submission.get("metric")
    _say(f"Metric submission {submission.get('id')} ({slug}): {client.url}/metrics/{slug}/")
    for upload in submission.get("uploads") or []:
        _say(f"  version {upload.get('version')}: {upload.get('status')}")
    return 0


def _references(args: argparse.Namespace) -> int:
    return _download(_client(args).references(args.dataset), args.output)


def _eval(args: argparse.Namespace) -> int:
    metrics = [slug.strip() for given in args.metric for slug in given.split(",") if slug.strip()]
    if not metrics:
        raise Failed("--metric: name at least one metric's slug")
    if not args.file.is_file():
        raise Failed(f"{args.file}: no such file")
    if args.media is not None and not args.media.is_dir():
        raise Failed(f"--media {args.media}: no such folder")
    try:
        local.library()  # before any download: say at once when capbench-eval is missing
    except local.LibraryMissing as error:
        raise Failed(str(error)) from None
    client = None if args.references else _client(args)
    references = _references_of(client, args)
    matched = matched_results(args.file, references, args.format, skip_unmatched=args.skip_unmatched)
    _say_skipped(matched, args.file)
    if matched.missing:
        print(
            f"{PROGRAM}: warning: {args.file.name}: {_missing_words(matched)}; the board refuses such a file, "
            f"and these numbers are over the {len(matched.captions):,} images it has",
            file=sys.stderr,
        )
    outcomes = local.evaluate(matched, references, metrics, media=args.media)
    if client is not None:
        outcomes = local.with_board_signatures(outcomes, _board_signatures(client, metrics))
    source = str(args.references) if args.references else f"the references from {client.url if client else ''}"
    if args.json:
        _say(local.outcome_json(outcomes, matched, references))
    else:
        _say(local.outcome_text(outcomes, matched, references, source))
    return 1 if any(outcome.error for outcome in outcomes) else 0


def _references_of(client: Client | None, args: argparse.Namespace) -> ReferenceSet:
    """The dataset's references: the file `--references` names, else downloaded."""
    if args.references is not None:
        if not args.references.is_file():
            raise Failed(f"{args.references}: no such file")
        with args.references.open("rb") as lines:
            return reference_set(args.dataset, lines, args.references.name)
    assert client is not None
    return reference_set(args.dataset, b"".join(client.references(args.dataset)).splitlines(), "the download")


def _board_signatures(client: Client, metrics: list[str]) -> dict[str, str | None]:
    """Each metric's signature as the server gives it (None where it gives none, or no such metric)."""
    found: dict[str, str | None] = {}
    for slug in metrics:
        try:
            signature = client.metric(slug).get("signature")
        except CapBenchError:
            signature = None
        found[slug] = signature if isinstance(signature, str) else None
    return found


def _say_skipped(matched: Matched, file: Path) -> None:
    if matched.skipped:
        print(f"{file.name}: left out {matched.skipped:,} lines of images the dataset does not have.", file=sys.stderr)


def _missing_words(matched: Matched) -> str:
    shown = ", ".join(repr(item) for item in matched.missing[:5])
    total = len(matched.missing) + len(matched.captions)
    return f"no caption for {len(matched.missing):,} of the dataset's {total:,} images (e.g. {shown})"


def _datasets(args: argparse.Namespace) -> int:
    found = _client(args).datasets()
    head = ["slug", "title", "kind", "modality"]
    _say(table(head, [[str(d.get(key) or "") for key in head] for d in found]))
    return 0


def _metrics(args: argparse.Namespace) -> int:
    found = _client(args).metrics()
    rows = [
        [str(m.get("slug")), str(m.get("name")), str(m.get("family")), "yes" if m.get("available", True) else "no"]
        for m in found
    ]
    _say(table(["slug", "name", "family", "available"], rows))
    return 0


# Output


def _say(text: str) -> None:
    """A line or lines with the server's text in them, on stdout, control characters escaped (terminal.shown)."""
    print(shown(text, lines=True))


class _Output:
    """`path` written through a sibling `.part` file that replaces it only when the command
    succeeds (a refused request or a dropped connection leaves an earlier file as it was), the
    server's bytes as they came; or stdout when None (left open), other people's text in it with its
    control characters escaped (terminal.SafeText: a JSON line stays the same data)."""

    binary = False

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.part = None if path is None else path.with_name(path.name + ".part")
        self.file: Any = None

    def __enter__(self) -> Any:
        if self.part is None:
            sys.stdout.flush()
            if self.binary:
                self.file = SafeBytes(getattr(sys.stdout, "buffer", None) or _TextBytes(sys.stdout))
            else:
                self.file = SafeText(sys.stdout)
            return self.file
        self.file = self.part.open("wb") if self.binary else self.part.open("w", encoding="utf-8", newline="")
        return self.file

    def __exit__(self, kind: object, *exc: object) -> None:
        if self.part is None:
            self.file.flush()
            return
        self.file.close()
        assert self.part is not None and self.path is not None
        if kind is None:
            os.replace(self.part, self.path)
        else:
            self.part.unlink(missing_ok=True)


class _opened(_Output):
    """Text (UTF-8, CSV-safe newlines)."""


class _opened_binary(_Output):
    binary = True


class _TextBytes:
    """Bytes written to a text stream that has no buffer (a test's captured stdout)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        self.stream.write(data.decode("utf-8", errors="replace"))

    def flush(self) -> None:
        self.stream.flush()


def _write_rows(rows: Iterable[dict[str, Any]], out: TextIO, format: str) -> int:
    """Rows as JSON Lines, or as CSV with the first row's keys for columns (lists and dicts as JSON); the count."""
    count = 0
    writer: csv.DictWriter[str] | None = None
    for row in rows:
        if format == "jsonl":
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            if writer is None:
                writer = csv.DictWriter(out, fieldnames=list(row), extrasaction="ignore", lineterminator="\n")
                writer.writeheader()
            writer.writerow({k: _cell(json.dumps(v) if isinstance(v, list | dict) else v) for k, v in row.items()})
        count += 1
    return count


# A spreadsheet runs a cell that starts like a formula (OWASP's advice against CSV injection): such a
# text, e.g. another user's caption `=HYPERLINK(…)`, gets a leading quote; numbers stay numbers.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, int | float):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROGRAM}: {shown(message, lines=True)}\n")
    return 1


def _file_problem(error: OSError | ValueError) -> str:
    if isinstance(error, OSError) and error.filename:
        return f"{error.filename}: {error.strerror or error}"
    return str(error)


if __name__ == "__main__":
    raise SystemExit(main())
