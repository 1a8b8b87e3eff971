"""A captioner board over one subset of a dataset's items: nocaps' in-domain, near-domain and
out-domain images (the items' `metadata["domain"]`, kept by the importer).

A subset's board is the dataset's board with every metric's number formed again over the subset's
images, exactly as the whole board's are (scoring.services.numbers, docs/metrics.md "A system's
number"): from the stored per-caption scores under the same metric version the whole board shows,
the mean of the per-caption scores or a corpus metric's statistic of their summed statistics, with
the 95% interval of 1,000 bootstrap draws of the subset's images. Weights a metric fitted on the
whole split (CIDEr-D's document frequencies) stay the whole split's, as the per-caption scores were
computed with them: a subset's CIDEr-D here can differ from one computed on that subset alone
(docs/datasets.md §8).

Built on the first request for a (board snapshot, subset) and kept in Valkey under the snapshot's
digests, so it is rebuilt exactly when the board is. Which subsets a dataset has is
`catalog.selectors.item_subsets` (on a hidden test set only those with enough items: a system-level
number over a few images would tell too much about their references).
"""

from __future__ import annotations

import copy

from capbench_eval.metaeval.system_value import system_number
from catalog.models import Dataset, Item
from catalog.selectors import SUBSET_FIELD
from leaderboards.caching import deployment_digest, kept_get, kept_set
from leaderboards.snapshots import digest_of, payload_digests
from scoring.models import Score
from scoring.selectors import system_values_shown
from scoring.services.numbers import metric_aggregation, totals_of


def _key(dataset: Dataset, payload: dict, subset: str) -> str:
    # The code too: how a number is formed may change while the whole board's numbers do not.
    return "subset-board:" + digest_of(
        [deployment_digest(), dataset.pk, payload_digests(payload), subset, dataset.references_hidden]
    )


def subset_kept(dataset: Dataset, payload: dict, subset: str) -> dict | None:
    """The subset's board built earlier from this snapshot, or None (building it is a bootstrap per
    cell: callers count a miss against the address's rate of such computations)."""
    found = kept_get(_key(dataset, payload, subset))
    return found if isinstance(found, dict) else None


def subset_payload(dataset: Dataset, payload: dict, subset: str) -> dict:
    """`payload` (the dataset's board snapshot) with every number computed on `subset`'s items."""
    kept = subset_kept(dataset, payload, subset)
    if kept is None:
        kept = _subset_build(dataset, payload, subset)
        kept_set(_key(dataset, payload, subset), kept)
    return kept


def _subset_build(dataset: Dataset, payload: dict, subset: str) -> dict:
    built = copy.deepcopy(payload)
    built["people"] = built["people_campaign"] = built["people_source"] = None
    systems = {row["system"]["id"] for row in built["rows"]}
    shown = system_values_shown(dataset=dataset)
    wanted = {
        (system_id, found.metric_version_id): slug for (system_id, slug), found in shown.items() if system_id in systems
    }
    items = Item.objects.filter(dataset=dataset, **{f"metadata__{SUBSET_FIELD}": subset}).values("pk")
    scores = Score.objects.filter(
        caption__system_id__in=systems, caption__item__in=items, metric_version_id__in={v for _, v in wanted}
    )
    summed = totals_of(scores, wanted)
    for row in built["rows"]:
        row.pop("people", None)
        for slug, cell in row["cells"].items():
            if cell["state"] != "value":
                continue
            found = shown.get((row["system"]["id"], slug))
            totals = summed.get((row["system"]["id"], found.metric_version_id)) if found is not None else None
            number = system_number(metric_aggregation(slug), totals) if totals is not None else None
            if number is None or number.value is None:
                cell.update(value=None, low=None, high=None, state="missing", note=f"no {subset} caption scored")
                continue
            cell.update(value=number.value, low=number.low, high=number.high, note=f"{number.images:,} images")
    return built
