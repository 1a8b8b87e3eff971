"""WSGI entry point. Once the application is loaded, what it loaded is frozen out of the garbage
collector's reach (`gc.freeze`): a full collection otherwise walks every module, template and
plotly figure class at each turn, and a 500-row API page triggers one every few requests, at
100–150 ms each (its p99 went from 192 to 98 ms: docs/performance.md, bench/scale.py)."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.production")
application = get_wsgi_application()
gc.collect()
gc.freeze()
