"""A captioner board over one subset of a dataset's items: nocaps' in-domain, near-domain and
out-domain images (the items' `metadata["domain"]`, kept by the importer).

A subset's board is the dataset's board with every metric's number computed again from the stored
per-caption scores of the items in the subset, under the same metric version the whole board shows:
the mean of the per-caption values, or for a corpus metric (BLEU) its corpus value from the summed
counts (each cell's note says which), with a 95% percentile interval over 1,000 bootstrap draws of
the subset's images. Weights a metric fitted on the whole split (CIDEr-D's document frequencies) stay
the whole split's, as the per-caption scores were computed with them: a subset's CIDEr-D here can
differ from one computed on that subset alone (docs/datasets.md §8).

Built on the first request for a (board snapshot, subset) and kept in Valkey under the snapshot's
digests, so it is rebuilt exactly when the board is. Which subsets a dataset has is
`catalog.selectors.item_subsets` (on a hidden test set only those with enough items: a system-level
number over a few images would tell too much about their references).
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict

import numpy as np

from catalog.models import Dataset
from catalog.selectors import SUBSET_FIELD
from evaluation.metaeval.bootstrap import DEFAULT_SEED as SEED
from evaluation.metaeval.bootstrap import cluster_weights
from leaderboards.caching import kept_get, kept_set
from leaderboards.comparison import metric_statistic
from leaderboards.snapshots import digest_of, payload_digests
from scoring.models import Score
from scoring.selectors import system_values_shown

REPLICATES = 1000


def _key(dataset: Dataset, payload: dict, subset: str) -> str:
    return "subset-board:" + digest_of([dataset.pk, payload_digests(payload), subset, dataset.references_hidden])


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
    built["people"] = built["people_campaign"] = None
    systems = [row["system"]["id"] for row in built["rows"]]
    versions = {key: shown.metric_version_id for key, shown in system_values_shown(dataset=dataset).items()}
    per_caption: dict[tuple[int, int], list[tuple[int, float, list | None]]] = defaultdict(list)
    rows = Score.objects.filter(
        caption__system_id__in=systems,
        caption__item__dataset=dataset,
        **{f"caption__item__metadata__{SUBSET_FIELD}": subset},
        metric_version_id__in=set(versions.values()),
        value__isnull=False,
    ).values_list("caption__system_id", "metric_version_id", "caption__item_id", "value", "statistics")
    for system_id, version_id, item_id, value, statistics in rows.iterator(chunk_size=5000):
        if value is not None:  # (filtered above; said again for the type checker)
            per_caption[(system_id, version_id)].append((item_id, value, statistics))
    for row in built["rows"]:
        row.pop("people", None)
        for slug, cell in row["cells"].items():
            version = versions.get((row["system"]["id"], slug))
            found = per_caption.get((row["system"]["id"], version)) if version is not None else None
            if cell["state"] != "value":
                continue
            if not found:
                cell.update(value=None, low=None, high=None, state="missing", note=f"no {subset} caption scored")
                continue
            cell.update(_subset_cell(slug, found), state="value")
    return built


def _subset_cell(slug: str, found: list[tuple[int, float, list | None]]) -> dict:
    """The metric's number over the found captions, with its bootstrap interval: images are drawn
    (a system's captions of one image stay together), as for the whole board's intervals."""
    found.sort(key=lambda entry: entry[0])
    values = np.array([value for _, value, _ in found], dtype=float)
    statistic, basis = metric_statistic(slug, values, [statistics for _, _, statistics in found])
    value = float(statistic(None))
    images = [item for item, _, _ in found]
    low = high = None
    if len(set(images)) > 1:
        weights, _ = cluster_weights(images, REPLICATES, SEED)
        draws = np.asarray(statistic(weights), dtype=float)
        draws = draws[np.isfinite(draws)]
        if len(draws):
            low, high = (float(bound) for bound in np.percentile(draws, [2.5, 97.5]))
    how = "corpus value from the summed counts" if basis == "corpus" else "mean of the per-caption scores"
    note = f"{len(set(images)):,} images; {how}"
    return {"value": value if math.isfinite(value) else None, "low": low, "high": high, "note": note}
