"""Pictures a cycle metric generated from captions (T2I cycle, CAMScore): the worker that generated
one keeps it in its own cache (evaluation/capbench_eval/backbones/t2i.py) and publishes it to the file store
before its score is stored, so a web server on any machine can show it (plumbing/storage.py)."""

from __future__ import annotations

from capbench_eval.backbones.t2i import KEY, generated_path
from plumbing import storage

PICTURE = "generated_image"  # the detail field naming a generated picture's key (leaderboards.items reads it)


def picture_name(key: str) -> str | None:
    """The picture's name in the file store, for a well-formed key only (never a path from outside)."""
    return f"generated/{key[:2]}/{key}.png" if KEY.fullmatch(key) else None


def pictures_publish(details: list[dict | None], *, required: bool = True) -> int:
    """Put each generated picture named in `details` into the file store (kept when already there).
    A picture just generated (`required`) but not on this machine is an error: its score would
    show nothing."""
    published = 0
    for key in dict.fromkeys(detail[PICTURE] for detail in details if detail and detail.get(PICTURE)):
        name = picture_name(key)
        path = generated_path(key)
        if name is None or path is None:
            if required:
                raise RuntimeError(f"the generated picture {key!r} is not in this worker's cache")
            continue
        if not storage.exists(name):
            storage.put_path(name, path)
            published += 1
    return published
