"""Import speed: Flickr8k-CF (47,830 captions + judgments) into a fresh dataset, against the
15 s budget of the foundation issue. Run from the repository root (`-m` puts it first on the import
path, so the test data's loader, tests/judgment_data.py, imports as `tests.judgment_data`) with
DATABASE_URL set (or under `python -m capbench.embedded`):

    DJANGO_SETTINGS_MODULE=capbench.settings.local python -m bench.importers
"""

from __future__ import annotations

import sys
import time
import uuid

import django

from tests.judgment_data import judgment_data  # the Flickr8k files, decompressed once

BUDGET_SECONDS = 15.0

DATA = judgment_data() / "flickr8k"


def main() -> int:
    django.setup()
    from django.core.management import call_command

    from catalog.importers.registry import read_bundle
    from catalog.models import Dataset
    from catalog.services.imports import dataset_import

    call_command("migrate", "--noinput", verbosity=0)
    slug = f"bench-cf-{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    bundle = read_bundle("flickr8k-cf", DATA)
    parsed = time.perf_counter()
    dataset_import(bundle=bundle, source_path=str(DATA), slug=slug)
    stored = time.perf_counter()
    dataset_import(bundle=bundle, source_path=str(DATA), slug=slug)
    again = time.perf_counter()
    Dataset.objects.filter(slug=slug).delete()
    total = stored - started
    print(f"flickr8k-cf first import: {total:.2f} s (parse {parsed - started:.2f} s, store {stored - parsed:.2f} s)")
    print(f"flickr8k-cf re-import (unchanged): {again - stored:.2f} s")
    print(
        f"ratio to the {BUDGET_SECONDS:.0f} s budget: {total / BUDGET_SECONDS:.2f} ({'within' if total <= BUDGET_SECONDS else 'OVER'})"
    )
    return 0 if total <= BUDGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
