"""A dataset's references as one file, for scoring on one's own machine (`capbench references`,
`capbench eval`: docs/client.md; `GET /api/v1/datasets/SLUG/references/`: docs/api.md).

One JSON object a line per item, in the dataset's order: the items' primary-key order, the order in
which a board's bootstrap draws images (`capbench_eval.metaeval.system_value.image_totals` sorts the
item ids the platform gives it), so `position` given to `capbench_eval.score(..., images=)` draws the
same resamples and gives the board's interval to the last digit. `item` is the id a results file
names the image by, `image` its file name (null without one).

On a hidden test set (`Dataset.references_hidden`) `references` is null for whoever may not read
them (`catalog.visibility.references_visible`, decided by the caller from the viewer): the ids,
names and order stay, so a results file can still be checked and mapped, and reference-free metrics
still scored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from catalog.models import Dataset, Item

CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
_CHUNK = 2000


def reference_rows(dataset: Dataset, *, shown: bool) -> Iterator[dict]:
    """Every item of `dataset` as {item, image, position, references}, in primary-key order; one
    query, read in chunks. `shown`: whether the viewer may read the references (else null)."""
    columns = ["external_id", "media__name"] + (["references"] if shown else [])
    rows = Item.objects.filter(dataset=dataset).order_by("id").values_list(*columns)
    for position, row in enumerate(rows.iterator(chunk_size=_CHUNK)):
        yield {
            "item": row[0],
            "image": row[1],
            "position": position,
            "references": list(row[2] or []) if shown else None,
        }


def reference_lines(dataset: Dataset, *, shown: bool) -> Iterator[str]:
    """The same rows as JSON Lines, each ending with its newline; texts as stored."""
    for row in reference_rows(dataset, shown=shown):
        yield json.dumps(row, ensure_ascii=False) + "\n"
