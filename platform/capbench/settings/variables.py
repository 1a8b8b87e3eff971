"""The `CAPBENCH_*` environment variables the platform reads (Django settings, gunicorn, `make run`),
each declared once (its name, type, default and meaning) as an attribute of `Platform`, with the
library's machinery (evaluation/capbench_eval/config.py). The settings modules read them through `env` as they
load (`CAPBENCH_BATCH_ATTEMPTS = env.batch_attempts`, an int), so a value of the wrong shape stops
them naming the variable; the apps read `settings.CAPBENCH_*`.

`python -m capbench.settings.variables --markdown` prints the platform's table of README.md's
"Configuration"."""

from __future__ import annotations

import sys

from capbench_eval.config import BOOL, FLOAT, INT, LIST, PATH, STR, Table, declare

MIB = 1024 * 1024


class Platform(Table):
    """The platform's variables (Django settings, `make run`)."""

    state_dir = declare(
        PATH, None, "Where a local run keeps its state (database, media, logs).", "`.capbench` in the repository"
    )
    web_workers = declare(
        INT, None, "Web server processes (gunicorn, `platform/capbench/gunicorn.py`).", "CPU cores + 1"
    )
    web_threads = declare(INT, 4, "Threads per web server process (keep-alive clients).")
    page_memory_mb = declare(
        INT, 32, "Memory each web process keeps for board responses and tables (beside Valkey's shared copy)."
    )
    ops_token = declare(
        STR,
        None,
        "Bearer token a Prometheus scraper sends for `/ops/metrics` (staff signed in need none); unset: staff only.",
    )
    site_url = declare(
        STR,
        None,
        "The site's address, which links in e-mail start with (never taken from a request).",
        "the address `make run` serves (`http://127.0.0.1:8000`; `make run PORT=8102`: port 8102); in "
        "production `https://` and the first of `DJANGO_ALLOWED_HOSTS`",
    )
    email_url = declare(
        STR,
        None,
        "How e-mail leaves: `smtp://USER:PASSWORD@HOST:587` (STARTTLS), `smtps://…:465`, `console:`, "
        "`file:///FOLDER` or `none:` (docs/email.md).",
        "`console:`; in production `none:` (nothing sent)",
    )
    email_from = declare(
        STR, None, "The From address of the site's e-mail.", "`CapBench <noreply@HOST>`, HOST from the site's address"
    )
    s3_bucket = declare(
        STR,
        None,
        "Keep stored files (media, uploads, generated pictures) in this S3-compatible bucket instead of "
        "`CAPBENCH_MEDIA_ROOT`; credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` "
        "(docs/deploy.md).",
        "unset: the local folder",
    )
    s3_endpoint_url = declare(STR, None, "The object store's URL (MinIO, Ceph …); unset: AWS S3.")
    s3_region = declare(STR, None, "The bucket's region.")
    s3_prefix = declare(STR, "", "A folder inside the bucket for every stored file.")
    file_cache = declare(
        PATH,
        None,
        "A worker's copies of files read from the object store (content-addressed; safe to delete).",
        "`file-cache` in the state dir",
    )
    media_hosts = declare(
        LIST,
        ["images.cocodataset.org", "s3.amazonaws.com"],
        "Hosts whose image URLs pages may show and workers may download when a dataset's file is not stored "
        "here (the CSP's img-src).",
    )
    media_max_bytes = declare(INT, 50_000_000, "The largest image a download by URL stores; a larger one is refused.")
    downloads_dir = declare(
        PATH,
        None,
        "Where `datasets fetch` keeps the files it downloads and unpacks (docs/datasets.md §7).",
        "`downloads` in the state dir",
    )
    fetch_max_bytes = declare(
        INT,
        16 * 1024 * MIB,
        "The most `datasets fetch` downloads of a file whose size the catalogue does not give (16 GiB: the "
        "largest such archive is about 7.3 GB); past it the download stops and nothing is kept.",
    )
    worker_heartbeat = declare(
        INT, 30, "Seconds after its last heartbeat a worker counts as dead, and its batches go to other workers."
    )
    worker_warmup = declare(
        BOOL,
        True,
        "Whether each worker process starts, as it starts, what the metrics of its queues would start on their "
        "first batch (METEOR's JVM, the tokenizer's); a metric that cannot start is logged, never fatal.",
    )
    media_root = declare(PATH, None, "Uploaded submissions and dataset media.", "`media` in the state dir")
    log_level = declare(STR, "INFO", "The root logger's level.")
    log_format = declare(
        STR, "text", "`text`, or `json`: one object a line with the job, batch and task ids (plumbing/logs.py)."
    )
    queue_prefix = declare(
        STR,
        "",
        "Prefix of Celery queue names and cache and rate-limit keys, so test runs and a local server share one broker.",
    )
    reap_every = declare(INT, 60, "Seconds between the periodic sweeps (stuck jobs, undelivered batches, re-scoring).")
    batch_size_cpu = declare(INT, 1000, "Captions per scoring batch on the `cpu` queue.")
    batch_size_gpu = declare(INT, 512, "Captions per scoring batch on the `gpu` queue.")
    batch_size_api = declare(INT, 50, "Captions per scoring batch on the `api` queue.")
    batch_attempts = declare(INT, 3, "Deliveries of a batch before its job fails.")
    retry_backoff = declare(INT, 5, "Seconds before a failed batch's first retry (doubling after each).")
    job_time_limit = declare(INT, 86400, "Seconds after which the sweep fails a job that has not ended.")
    batch_resend_after = declare(INT, 1800, "Seconds after which the sweep re-sends a batch not yet done.")
    submission_max_bytes = declare(INT, 20 * MIB, "Largest results file accepted.")
    request_max_bytes = declare(
        INT, None, "Largest request body read (413 above it).", "CAPBENCH_SUBMISSION_MAX_BYTES + 1 MiB"
    )
    caption_max_chars = declare(INT, 500, "Longest caption accepted in a submission.")
    description_max_chars = declare(INT, 5000, "Longest submission description accepted.")
    submissions_per_day = declare(INT, 10, "Submissions per account per day.")
    submissions_concurrent = declare(INT, 3, "Submissions per account being scored at once.")
    metric_uploads_per_day = declare(INT, 10, "Uploads of a metric's scores per account per day.")
    metric_min_coverage = declare(
        FLOAT, 0.95, "Share of a dataset's candidates a metric's scores file must cover (the missing ones are shown)."
    )
    duplicate_window = declare(
        INT, 86400, "Seconds in which the same file for the same dataset is refused as a duplicate (0: never)."
    )
    flag_copy_share = declare(
        FLOAT,
        0.2,
        "Share of a submission's captions copying their image's references (as written, or lower-cased without "
        "punctuation) from which it is flagged (not refused).",
    )
    flag_short_share = declare(
        FLOAT, 0.2, "Share of a submission's captions with fewer than two words from which it is flagged as near-empty."
    )
    rate_limits_enabled = declare(BOOL, True, "Whether the rate limits below apply.")
    api_anon_rate = declare(STR, "120/min", "API requests per address, anonymous.")
    api_user_rate = declare(STR, "600/min", "API requests per account.")
    api_address_rate = declare(STR, "1200/min", "Every API request per address.")
    page_anon_rate = declare(STR, "600/min", "HTML pages and media per address, anonymous.")
    page_user_rate = declare(STR, "1200/min", "HTML pages per account.")
    api_submission_rate = declare(STR, "20/hour", "Upload attempts per account (web and API).")
    signup_rate = declare(STR, "5/hour", "Sign-up attempts per address.")
    login_address_rate = declare(STR, "20/10min", "Sign-in attempts per address.")
    login_account_rate = declare(STR, "10/10min", "Sign-in attempts per account.")
    token_rate = declare(STR, "10/hour", "API tokens issued or rotated per address or account.")
    password_reset_rate = declare(
        STR, "5/hour", "Password-reset requests per address, and reset e-mails per e-mail address."
    )
    action_rate = declare(STR, "60/hour", "Withdrawals and visibility changes per account.")
    account_data_rate = declare(
        STR, "10/day", "Downloads of one's data and account deletions (attempts, wrong passwords included) per account."
    )
    comparison_rate = declare(STR, "120/hour", "Paired comparisons of two systems per address (each runs a bootstrap).")
    trusted_proxies = declare(
        LIST,
        [],
        "Addresses or networks of our own proxies, whose X-Forwarded-For is believed for the client address.",
        "none",
    )
    rating_rate = declare(
        STR, "600/hour", "Answers (ratings, arena choices, skips) per annotator in live human evaluation."
    )
    campaign_refresh_seconds = declare(
        INT, 60, "Seconds between a campaign's first new rating and the refresh of its results, correlations and board."
    )
    people_answers = declare(
        INT,
        3,
        "Answers a caption needs (ratings, or comparisons in an arena) to count towards a campaign's board column.",
    )
    people_images = declare(
        INT, 30, "Images per system with that many answers before a campaign can be a captioner board's people column."
    )
    linked_address_days = declare(
        INT, 90, "Days two accounts seen at one address are taken for one person (no rating of the other's captions)."
    )
    login_failures = declare(INT, 5, "Failed sign-ins before a lockout.")
    staff_2fa = declare(
        BOOL,
        None,
        "Whether staff sessions need a two-factor code (TOTP) before any page, the admin and /ops/ included.",
        "on in production, off elsewhere",
    )
    login_cooloff_minutes = declare(INT, 15, "Minutes a lockout lasts.")
    db_pool = declare(BOOL, True, "Whether each process keeps a pool of database connections.")
    db_pool_size = declare(INT, 8, "Most database connections per process.")
    db_pool_min_size = declare(INT, 1, "Database connections a process keeps open when idle.")
    db_pool_timeout = declare(INT, 10, "Seconds a request waits for a free database connection.")
    db_pool_max_idle = declare(INT, 300, "Seconds before an idle pooled connection is closed.")


env = Platform()  # env.batch_attempts: the value now

# Names of Django settings that look like variables but are built from several of them.
SETTINGS_ONLY = {"CAPBENCH_RATES": "the *_RATE variables", "CAPBENCH_BATCH_SIZE": "the CAPBENCH_BATCH_SIZE_* variables"}

if __name__ == "__main__":
    sys.exit(Platform.main(sys.argv[1:], "capbench.settings.variables"))
