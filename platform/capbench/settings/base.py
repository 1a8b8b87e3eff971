"""Settings shared by every environment. Each value comes from the environment with a safe default."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from capbench.settings.environment import (
    LOCAL_DATABASE_URL,
    LOCAL_REDIS_URL,
    database_from_url,
    env_bool,
    env_int,
    env_str,
    running_services,
)
from capbench.settings.files import local_storage, object_storage
from capbench.settings.mail import mail_transport, sender, site_url
from capbench.settings.variables import env
from capbench_eval.config import ConfigError

ROOT_DIR = Path(__file__).resolve().parents[3]
STATE_DIR = env.state_dir or ROOT_DIR / ".capbench"

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "capbench-local-development-key-not-for-production")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_str("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular_sidecar",
    "django_filters",
    "drf_spectacular",
    "axes",
    # Staff two-factor sign-in (accounts.services.two_factor): TOTP devices.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "catalog",
    "submissions",
    "workbench",
    "scoring",
    "campaigns",
    "leaderboards",
    "accounts",
    "api",
]

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "submissions:mine"
LOGOUT_REDIRECT_URL = "leaderboards:home"
# A password-reset link works for this long (and once: a changed password voids it).
PASSWORD_RESET_TIMEOUT = 2 * 3600

# E-mail (docs/email.md): password resets, and a word to a submission's owner when scoring ends.
# Links in mail start with SITE_URL, never with a request's Host. CAPBENCH_EMAIL_URL names the
# backend (capbench/settings/mail.py); unset, mail is printed on the console (`make run`).
SITE_URL = site_url(env.site_url or "http://127.0.0.1:8000")
_mail = mail_transport(env.email_url or "console:")
EMAIL_BACKEND = _mail.backend
EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD = _mail.host, _mail.port, _mail.user, _mail.password
EMAIL_USE_TLS, EMAIL_USE_SSL, EMAIL_FILE_PATH = _mail.use_tls, _mail.use_ssl, _mail.file_path
EMAIL_TIMEOUT = 10  # seconds: a mail server that stops answering never holds a request or a worker long
DEFAULT_FROM_EMAIL = SERVER_EMAIL = sender(SITE_URL, env.email_from)

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Refuses oversized bodies from Content-Length and NUL bytes in the URL before anything reads them.
    "plumbing.guards.RequestGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "plumbing.limits.PageRateMiddleware",
    # Which two-factor device verified this session; then staff without one go to the code page.
    "django_otp.middleware.OTPMiddleware",
    "accounts.middleware.StaffTwoFactorMiddleware",
    # Where signed-in accounts act from (after the view: API tokens are read there), for live human
    # evaluation's sock-puppet rule.
    "campaigns.middleware.AccountAddressMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A service's refusal that no view expected: its status and words, never a 500 (plumbing.refusals).
    "plumbing.refusals.RefusalMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as its documentation asks: login lock-out for every authentication path.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out account or address
    "django.contrib.auth.backends.ModelBackend",
]

ROOT_URLCONF = "capbench.urls"
WSGI_APPLICATION = "capbench.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [ROOT_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# DATABASE_URL / REDIS_URL when set; else those of the platform `make run` is serving from STATE_DIR.
RUNNING = running_services(STATE_DIR)
DATABASES = {"default": database_from_url(env_str("DATABASE_URL", RUNNING.get("DATABASE_URL", LOCAL_DATABASE_URL)))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = STATE_DIR / "static"
STATICFILES_DIRS = [ROOT_DIR / "static"]
# plotly.js comes from the plotly wheel and is served by us (/static/plotly/plotly.min.js): no CDN,
# and none of the wheel's other files (plumbing/staticfiles.py).
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "plumbing.staticfiles.PlotlyFinder",
]
# WhiteNoise serves static files in every environment, DEBUG or not, straight from the finders
# (STATICFILES_DIRS and the apps' static/: Swagger UI's sidecar, the admin): `make run` needs no
# collectstatic. A deployment that ran collectstatic is served from STATIC_ROOT as well.
WHITENOISE_USE_FINDERS = True
# Without DEBUG, pages name static files by their content hash (collectstatic writes them to
# STATIC_ROOT, with brotli and gzip copies, each made once per content: plumbing/staticfiles.py):
# served compressed with ten years' caching ("immutable"), renamed by any change.
# Stored files (dataset media, uploads, generated pictures: plumbing/storage.py) go to the default
# storage: MEDIA_ROOT on this machine, or an S3-compatible bucket when CAPBENCH_S3_BUCKET is set
# (workers and web servers on several machines then share no disk).
S3_BUCKET = env.s3_bucket
STORAGES = {
    "default": object_storage(
        S3_BUCKET,
        env.s3_endpoint_url,
        env.s3_region,
        env.s3_prefix,
    )
    if S3_BUCKET
    else local_storage(),
    "staticfiles": {"BACKEND": "plumbing.staticfiles.CompressedManifestStorage"},
}

# Content-addressed names: <sha[:2]>/<sha><ext> under MEDIA_ROOT (or the bucket). Nothing there is
# served by path: views serve files by id, through the visibility rule.
MEDIA_URL = "media/"
MEDIA_ROOT = env.media_root or STATE_DIR / "media"
# A worker's local copies of files from an object store (content-addressed: never stale).
CAPBENCH_FILE_CACHE = env.file_cache or STATE_DIR / "file-cache"
# Pages show a dataset's pictures from these hosts while no file is stored (catalog/pictures.py).
CAPBENCH_MEDIA_HOSTS = [host.lower() for host in env.media_hosts]
CAPBENCH_MEDIA_MAX_BYTES = env.media_max_bytes
# What `datasets fetch` downloads and unpacks (catalog/services/fetch.py).
CAPBENCH_DOWNLOADS_DIR = env.downloads_dir or STATE_DIR / "downloads"
CAPBENCH_FETCH_MAX_BYTES = env.fetch_max_bytes  # a file the catalogue gives no size for
# A worker whose heartbeat is this old is dead: its batches go to others (plumbing/heartbeat.py).
CAPBENCH_WORKER_HEARTBEAT = env.worker_heartbeat
if CAPBENCH_WORKER_HEARTBEAT < 3:
    raise ConfigError(f"CAPBENCH_WORKER_HEARTBEAT={CAPBENCH_WORKER_HEARTBEAT} is not valid: expected 3 or more")
# Each worker process starts its queues' metrics' JVMs as it starts, not on its first batch (scoring/warmup.py).
CAPBENCH_WORKER_WARMUP = env.worker_warmup

# Celery: a Redis-compatible broker always; no eager mode outside single-function unit tests.
REDIS_URL = env_str("REDIS_URL", RUNNING.get("REDIS_URL", LOCAL_REDIS_URL))
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # LOGGING above formats the workers' records too
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660)
# Queue names carry a prefix so that test runs and a local platform sharing one Redis stay apart.
CAPBENCH_QUEUE_PREFIX = env.queue_prefix
CELERY_TASK_DEFAULT_QUEUE = f"{CAPBENCH_QUEUE_PREFIX}cpu"
# A task a dead worker held is redelivered by the broker after this long; the worker that starts in
# its place re-queues it at once (scoring.signals), and the reaper after the task time limit.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
CELERY_BEAT_SCHEDULE = {
    "reap-stuck-jobs": {
        "task": "scoring.reap",
        "schedule": float(env.reap_every),
        "options": {"queue": f"{CAPBENCH_QUEUE_PREFIX}cpu", "expires": 300},
    },
    "correlate-metric-uploads": {
        "task": "workbench.reap",
        "schedule": float(env.reap_every),
        "options": {"queue": f"{CAPBENCH_QUEUE_PREFIX}cpu", "expires": 300},
    },
    # Campaigns whose scheduled refresh was lost (broker or Valkey away when the rating came).
    "refresh-campaigns": {
        "task": "campaigns.reap",
        "schedule": float(env.reap_every),
        "options": {"queue": f"{CAPBENCH_QUEUE_PREFIX}cpu", "expires": 300},
    },
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXPIRES = 3600

# Scoring: captions per batch by queue, attempts per batch, limits for the reaper.
CAPBENCH_BATCH_SIZE = {
    "cpu": env.batch_size_cpu,
    "gpu": env.batch_size_gpu,
    "api": env.batch_size_api,
}
CAPBENCH_BATCH_ATTEMPTS = env.batch_attempts
CAPBENCH_RETRY_BACKOFF = env.retry_backoff
CAPBENCH_JOB_TIME_LIMIT = env.job_time_limit
CAPBENCH_BATCH_RESEND_AFTER = env.batch_resend_after

# Submissions: what an upload may be, and how often.
CAPBENCH_SUBMISSION_MAX_BYTES = env.submission_max_bytes
CAPBENCH_CAPTION_MAX_CHARS = env.caption_max_chars
CAPBENCH_SUBMISSIONS_PER_DAY = env.submissions_per_day
CAPBENCH_SUBMISSIONS_CONCURRENT = env.submissions_concurrent
# Metric submissions (workbench): uploads of scores per account per day, the coverage they need.
CAPBENCH_METRIC_UPLOADS_PER_DAY = env.metric_uploads_per_day
CAPBENCH_METRIC_MIN_COVERAGE = env.metric_min_coverage
CAPBENCH_DESCRIPTION_MAX_CHARS = env.description_max_chars
# The same file from the same account for the same dataset within this many seconds is answered
# with the submission it already made (409), not a second copy (0: never).
CAPBENCH_DUPLICATE_WINDOW = env.duplicate_window
# A submission is flagged (not refused) from these shares of its captions copying their references or
# near-empty (submissions.integrity).
CAPBENCH_FLAG_COPY_SHARE = env.flag_copy_share
CAPBENCH_FLAG_SHORT_SHARE = env.flag_short_share

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.TokenAuthentication",  # staff tokens refused under CAPBENCH_STAFF_2FA
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.BoundedLimitOffset",
    "PAGE_SIZE": 100,
    # Atomic Redis counters (plumbing.limits), not DRF's read-then-write cache throttles.
    "DEFAULT_THROTTLE_CLASSES": ["api.throttles.ApiRate"],
    # A service's refusal (plumbing.errors.ApplicationError) answered with its status and body.
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "CapBench API",
    "DESCRIPTION": "Datasets, submissions, per-caption scores, leaderboards and metric–human correlations.",
    "VERSION": "1",
    # Request bodies get their own components: an upload is `format: binary` in multipart (a file
    # picker in Swagger UI), not the `uri` a response's file field is.
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "DatasetKindEnum": "catalog.models.Dataset.Kind",
        "SystemKindEnum": "catalog.models.System.Kind",
        "CampaignModeEnum": "campaigns.models.Campaign.Mode",
        "CampaignStatusEnum": "campaigns.models.Campaign.Status",
    },
    # Every operation's error answers (400 located problems, 401, 403, 404, 429/503 with Retry-After).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.documentation.add_error_responses"],
    # Swagger UI from the local sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# Content-Security-Policy on every HTML response, in every environment (django-csp 4). No inline
# script anywhere: page scripts are static files under static/js/, and the data they need comes in
# data- attributes or json_script (a non-executing application/json element). Plotly and Swagger UI
# write <style> elements and style attributes, hence 'unsafe-inline' for styles only.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": [
            "'self'",
            "data:",
            "blob:",
            *(f"{scheme}://{host}" for host in CAPBENCH_MEDIA_HOSTS for scheme in ("https", "http")),
        ],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

# Throttle counters need a cache shared by every web process: the Redis the broker uses.
# Short timeouts: a Valkey that stops answering slows a page by half a second, never hangs it.
CACHE_OPTIONS = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "OPTIONS": CACHE_OPTIONS,
    }
}
# Each web process also keeps board responses and tables it has served (leaderboards/caching.py):
# immutable entries, so a copy in memory is never stale and a hit costs no round trip to Valkey.
PAGE_MEMORY_BYTES = env.page_memory_mb * 1024 * 1024
# A scraper sending this bearer token may read `/ops/metrics` (api/ops.py); unset: staff only.
CAPBENCH_OPS_TOKEN = env.ops_token

# Records carry the job / batch / task they are about (plumbing/logs.py); CAPBENCH_LOG_FORMAT=json
# writes one JSON object a line for a log store. Celery workers log through the same handlers.
LOG_FORMAT = env.log_format.strip().lower()
if LOG_FORMAT not in {"text", "json"}:
    raise ConfigError(f"CAPBENCH_LOG_FORMAT={LOG_FORMAT!r} is not valid: expected text or json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "formatters": {
        "text": {"()": "plumbing.logs.TextFormatter"},
        "json": {"()": "plumbing.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT},
        "mail_admins": {
            "level": "ERROR",
            "filters": ["require_debug_false"],
            "class": "django.utils.log.AdminEmailHandler",
        },
    },
    "root": {"handlers": ["console"], "level": env.log_level},
    # Django's default configuration gives "django" a console handler of its own (under DEBUG) beside
    # the root's, so a server error was printed twice. Here "django" keeps only Django's mail to
    # ADMINS (none unless set) and its records reach the console through the root: each once.
    "loggers": {"django": {"handlers": ["mail_admins"], "level": "INFO", "propagate": True}},
}

# Request bodies: refused from the declared Content-Length before a byte is read (a submission file
# plus the multipart envelope and the form's other fields).
CAPBENCH_REQUEST_MAX_BYTES = env.request_max_bytes or CAPBENCH_SUBMISSION_MAX_BYTES + 1024 * 1024
# Uploads over this size go to a temporary file on disk, never into memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# Abuse limits (plumbing.limits; docs/security.md): "N/UNIT" or "N/KUNIT" ("5/15min"), counted
# atomically in Redis per client address or per account.
CAPBENCH_RATE_LIMITS_ENABLED = env.rate_limits_enabled
CAPBENCH_RATES = {
    "api_anon": env.api_anon_rate,  # API requests per address, anonymous
    "api_user": env.api_user_rate,  # API requests per account
    "api_address": env.api_address_rate,  # every API request per address
    "pages_anon": env.page_anon_rate,  # HTML pages and media per address, anonymous
    "pages_user": env.page_user_rate,  # HTML pages per account
    "submissions": env.api_submission_rate,  # upload attempts per account (web + API)
    "signup": env.signup_rate,  # sign-up attempts per address
    "login_address": env.login_address_rate,  # sign-in attempts per address
    "login_account": env.login_account_rate,  # sign-in attempts per account
    "tokens": env.token_rate,  # API tokens issued or rotated per address/account
    "password_reset": env.password_reset_rate,  # reset requests per address, per e-mail
    "actions": env.action_rate,  # withdraw / visibility changes per account
    "account_data": env.account_data_rate,  # data downloads, account deletions
    "comparisons": env.comparison_rate,  # paired comparisons per address
    "ratings": env.rating_rate,  # live human evaluation answers per annotator
}
# Live human evaluation (campaigns): how long a campaign's results wait to take in more ratings
# before they are computed again, and how long a shared client address links two accounts.
CAPBENCH_CAMPAIGN_REFRESH_SECONDS = env.campaign_refresh_seconds
CAPBENCH_LINKED_ADDRESS_DAYS = env.linked_address_days
# A campaign an organiser chose for a captioner board's people column replaces the dataset's imported
# judgments there only once every system it ranks has this many images whose caption got this many
# answers (and, rating, an agreement estimate): campaigns.selectors.board_people.
CAPBENCH_PEOPLE_ANSWERS = env.people_answers
CAPBENCH_PEOPLE_IMAGES = env.people_images
# Addresses or networks of our reverse proxies (comma-separated, e.g. "10.0.0.5,172.18.0.0/16"): only
# a request from one of them has its X-Forwarded-For read (plumbing.limits.client_address).
CAPBENCH_TRUSTED_PROXIES = env.trusted_proxies

# Login lock-out (django-axes): after AXES_FAILURE_LIMIT failed sign-ins for one account (from any
# address) or from one address (for any account), further attempts are refused with 429 and the
# time to retry until the cool-off has passed since the last failure. Web, admin and API token logins.
AXES_FAILURE_LIMIT = env.login_failures
AXES_COOLOFF_TIME = timedelta(minutes=env.login_cooloff_minutes)
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the time we announce is the time it opens
AXES_CLIENT_IP_CALLABLE = "plumbing.limits.axes_address"
AXES_LOCKOUT_CALLABLE = "accounts.lockout.lockout_response"
AXES_VERBOSE = False

# Staff two-factor sign-in (docs/security.md): with it on, a staff session is sent to the code page
# until a TOTP code is given in it. Off unless CAPBENCH_STAFF_2FA=1 (production: on unless =0).
_staff_2fa = env.staff_2fa
CAPBENCH_STAFF_2FA = bool(_staff_2fa)
OTP_TOTP_ISSUER = "CapBench"
