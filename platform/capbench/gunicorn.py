"""The web server's settings, the same for `make run` and a deployment:

    python -m gunicorn -c python:capbench.gunicorn capbench.wsgi --bind HOST:PORT

Processes sized to the cores (CAPBENCH_WEB_WORKERS, default cores + 1), each with threads for
keep-alive clients (CAPBENCH_WEB_THREADS); static files come from the app itself (WhiteNoise)."""

from __future__ import annotations

import os

from capbench.settings.variables import env as _env  # (gunicorn reads every module-level name as a setting)

workers = _env.web_workers or (os.cpu_count() or 1) + 1
threads = _env.web_threads
worker_class = "gthread"
keepalive = 5  # seconds a keep-alive connection waits for its next request
graceful_timeout = 10  # on SIGTERM: requests in flight finish, then the workers stop
timeout = 120  # a request (an upload being validated) may take this long before its worker is replaced
accesslog = None  # requests are logged by the app where it matters; the error log goes to stderr
