"""Pictures for the scoring tests whose metrics look at the images."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from django.conf import settings

from catalog.models import Media


def attach_images(dataset, count: int, tmp_path: Path) -> None:
    """Random PNGs stored content-addressed, as `datasets media attach` stores real files."""
    from PIL import Image

    rng = np.random.default_rng(1)
    for media in Media.objects.filter(dataset=dataset).order_by("id")[:count]:
        source = tmp_path / f"{media.pk}.png"
        Image.fromarray(rng.integers(0, 255, (36, 36, 3), dtype=np.uint8)).save(source)
        content = source.read_bytes()
        sha = hashlib.sha256(content).hexdigest()
        target = Path(settings.MEDIA_ROOT) / sha[:2] / f"{sha}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        Media.objects.filter(pk=media.pk).update(sha256=sha, stored_path=f"{sha[:2]}/{sha}.png")
