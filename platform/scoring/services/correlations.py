"""The meta-evaluation: a metric version's stored per-caption scores against a dataset's human
judgments, under every protocol the dataset has, with 95% cluster-bootstrap intervals."""

from __future__ import annotations

import logging
import random

import numpy as np
from django.db import connection, transaction

from capbench_eval.metaeval.bootstrap import cluster_bootstrap_draws
from capbench_eval.metaeval.kendall import pair_counts
from capbench_eval.metaeval.pairwise import pairwise_accuracy
from capbench_eval.metaeval.protocols import Protocol, dataset_protocols_of, rating_cells_with_draws
from capbench_eval.metaeval.significance import paired_draws_p_values, significance_clusters
from capbench_eval.metaeval.system_level import MIN_SYSTEMS, JudgedRows, ScoredRows, system_level_cells
from capbench_eval.metrics.base import CORPUS
from catalog.models import Caption, Dataset, Judgment, PairJudgment, System
from scoring.models import (
    CorrelationDraws,
    CorrelationResult,
    Metric,
    MetricVersion,
    ResultsRevision,
    Score,
    SignificanceResult,
    protocol_parts,
)
from scoring.services.numbers import metric_aggregation
from scoring.services.training import SPLITS, item_split

TIE_CONVENTIONS = ("accuracy", "accuracy_ties_half", "accuracy_ties_second")  # a tie: wrong, half, the second's

log = logging.getLogger(__name__)


def dataset_protocols(dataset: Dataset) -> list[Protocol]:
    """The protocols of the dataset's source (paper first), or the generic canonical one
    (capbench_eval.metaeval.protocols.dataset_protocols_of)."""
    return dataset_protocols_of(dataset.source_format, dataset.slug, dataset.kind)


def dataset_correlations(*, dataset: Dataset, metric_version: MetricVersion) -> list[CorrelationResult]:
    scores = dict(
        Score.objects.own()
        .filter(metric_version=metric_version, caption__item__dataset=dataset)
        .values_list("caption_id", "value")
    )
    sign = 1.0 if metric_version.metric.higher_is_better else -1.0  # correlations read "higher agrees with people"
    scores = {caption: None if value is None else sign * value for caption, value in scores.items()}
    held_out, split = _held_out(dataset, metric_version)
    if held_out:
        scores = _split_only(dataset, scores, split)
    board = BoardNumbers(dataset, metric_version, set(scores), sign)
    cells = []
    protocols = dataset_protocols(dataset)
    for chosen in protocols:
        if dataset.kind == Dataset.Kind.RATING:
            cells += _rating_cells(dataset, chosen, scores, board)
        else:
            cells += _pairwise_cells(dataset, chosen, scores)
    for cell in cells if held_out else []:
        cell["detail"] = {**cell.get("detail", {}), "held_out": held_out}
    stored = correlations_store(dataset=dataset, metric_version=metric_version, cells=cells)
    # Cells of a protocol no longer current (a version whose rules changed): the current ones replace them.
    CorrelationResult.objects.filter(
        dataset=dataset, metric_version=metric_version, protocol_name__in=CURRENT_NAMES
    ).exclude(protocol__in=[p.key for p in protocols]).delete()
    return stored


CURRENT_NAMES = ("paper", "canonical")  # the protocol families a dataset's own cells are under (not "live")


def correlations_refresh_stale(*, limit: int = 3) -> set[int]:
    """Compute again the correlations of up to `limit` (dataset, metric version) pairs with cells
    made under a protocol version no longer current (an upgrade changed its rules), in random order
    so that one that fails cannot hold up the rest, then those datasets' significance clusters: the
    sweep's work. Returns the datasets."""
    stale: set[tuple[int, int]] = set()
    current = CorrelationResult.objects.filter(protocol_name__in=CURRENT_NAMES)
    for dataset in Dataset.objects.filter(pk__in=current.values("dataset_id")):
        keys = [p.key for p in dataset_protocols(dataset)]
        stale |= set(
            current.filter(dataset=dataset).exclude(protocol__in=keys).values_list("dataset_id", "metric_version_id")
        )
    chosen = random.sample(sorted(stale), min(limit, len(stale)))
    datasets = set()
    for dataset_id, version_id in chosen:
        try:
            version = MetricVersion.objects.select_related("metric").get(pk=version_id)
            dataset_correlations(dataset=Dataset.objects.get(pk=dataset_id), metric_version=version)
        except Exception:  # logged; the others are done, this one again at a later sweep
            log.exception(
                "could not compute correlations of metric version %s on dataset %s again", version_id, dataset_id
            )
            continue
        datasets.add(dataset_id)
    for dataset_id in sorted(datasets):
        dataset_significance(dataset=Dataset.objects.get(pk=dataset_id))
    return datasets


def results_revision_hold() -> None:
    """Move the results revision first, at the start of a transaction that writes correlation or
    significance rows: its row lock is then always taken before any result row's. The trigger that
    moves it after each statement (migration scoring 0009) took it after the first row instead, and
    two writers of the same cell deadlocked: one holding the revision and waiting for the other's new
    row, the other holding that row and waiting for the revision."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ResultsRevision._meta.db_table} (id, number) VALUES (1, 1) "
            f"ON CONFLICT (id) DO UPDATE SET number = {ResultsRevision._meta.db_table}.number + 1"
        )


def correlations_store(
    *, dataset: Dataset, metric_version: MetricVersion, cells: list[dict]
) -> list[CorrelationResult]:
    """Write correlation cells (each names its protocol, dimension, statistic and level) and their
    bootstrap draws, one row per cell, updated in place."""
    results = []
    with transaction.atomic():
        results_revision_hold()
        for cell in cells:
            draws = cell.pop("draws", None)
            protocol = cell.pop("protocol")
            name, version = protocol_parts(protocol)
            result = CorrelationResult.objects.update_or_create(
                metric_version=metric_version,
                dataset=dataset,
                dimension=cell.pop("dimension"),
                statistic=cell.pop("statistic"),
                level=cell.pop("level", CorrelationResult.Level.CAPTION),
                protocol=protocol,
                defaults={**cell, "protocol_name": name, "protocol_version": version},
            )[0]
            if draws is not None:
                CorrelationDraws.objects.update_or_create(
                    result=result, defaults={"values": np.asarray(draws, dtype=np.float32).tobytes()}
                )
            results.append(result)
    return results


def _held_out(dataset: Dataset, metric_version: MetricVersion) -> tuple[str, str]:
    """A metric fitted on this dataset's judgments (CAMScore's fusion) is compared with them on the
    one split it neither trained nor stopped on: (the note saying so, that split), else ("", "")."""
    fusion = metric_version.config.get("fusion")
    trained = fusion.get("trained_on") if isinstance(fusion, dict) else None
    if not isinstance(trained, dict) or trained.get("dataset") != dataset.slug:
        return "", ""
    [unseen] = sorted(set(SPLITS) - {trained.get("split"), trained.get("validation")}) or ["none"]
    return (
        f"trained on this dataset's {trained.get('split')} split and stopped on its {trained.get('validation')} "
        f"split: only the {unseen} split's captions are compared",
        unseen,
    )


def _split_only(dataset: Dataset, scores: dict[int, float | None], split: str) -> dict[int, float | None]:
    items = dict(Caption.objects.filter(pk__in=list(scores)).values_list("pk", "item__external_id"))
    return {pk: value for pk, value in scores.items() if item_split(dataset.slug, items[pk]) == split}


def _rating_cells(
    dataset: Dataset, chosen: Protocol, scores: dict[int, float | None], board: BoardNumbers
) -> list[dict]:
    cells = []
    for dimension in dataset.dimensions or ["overall"]:
        rows = list(
            Judgment.objects.own()
            .filter(caption__item__dataset=dataset, dimension=dimension)
            .order_by("id")
            .values_list(
                "caption_id", "value", "caption__item_id", "caption__system_id", "caption__system__kind", "annotator"
            )
        )
        cells += rating_dimension_cells(dimension, chosen, rows, scores, board=board)
        for kind in chosen.without:  # the same cells without one kind of system's rows (THumB's Human)
            kept = [row for row in rows if row[4] != kind]
            if len(kept) < len(rows):
                cells += rating_dimension_cells(without_dimension(dimension, kind), chosen, kept, scores, board=board)
    return cells


def without_dimension(dimension: str, kind: str) -> str:
    """The dimension of a cell computed without one kind of system's rows: "total, without Human"."""
    return f"{dimension}, without {kind.capitalize()}"


REAL_SYSTEMS = (System.Kind.MODEL, System.Kind.HUMAN)  # the kinds a system-level cell ranks (not a mixed pool)


class BoardNumbers:
    """The systems' captions of a dataset as their board numbers are formed from them, for the
    system level: read once per metric version, when a dimension first needs them. `captions`: the
    captions compared (a held-out split's only); `sign`: -1 where lower is better."""

    def __init__(self, dataset: Dataset, version: MetricVersion, captions: set[int], sign: float) -> None:
        self.dataset, self.version, self.captions, self.sign = dataset, version, captions, sign
        self.metric = metric_aggregation(version.metric.slug)
        self._rows: ScoredRows | None = None
        self._read = False

    def rows(self) -> ScoredRows | None:
        """Every scored caption of the dataset's real systems (caption_totals, system, item); None
        when a corpus metric lacks a caption's statistics."""
        if not self._read:
            self._read, self._rows = True, self._scored_rows()
        return self._rows

    def _scored_rows(self) -> ScoredRows | None:
        corpus = self.metric.aggregation == CORPUS
        found = (
            Score.objects.own()
            .filter(
                metric_version=self.version,
                caption__item__dataset=self.dataset,
                caption__system__kind__in=REAL_SYSTEMS,
                value__isnull=False,
            )
            .order_by("caption_id")
            .values_list("caption_id", "value", "caption__system_id", "caption__item_id", "statistics")
        )
        kept = [row for row in found if row[0] in self.captions and row[1] is not None and np.isfinite(row[1])]
        try:
            totals = self.metric.caption_totals(
                np.array([row[1] for row in kept], dtype=float), [row[4] for row in kept] if corpus else None
            )
        except ValueError:
            return None
        return ScoredRows(totals, np.array([row[2] for row in kept]), np.array([row[3] for row in kept]))


def rating_dimension_cells(
    dimension: str,
    chosen: Protocol,
    rows: list,
    scores: dict[int, float | None],
    *,
    board: BoardNumbers | None = None,
) -> list[dict]:
    """One dimension's caption-level cells (every statistic of `chosen`, with draws) and, given the
    dataset's `board` numbers and where the rows hold enough real systems, its system-level ones.
    `rows`: (caption id, human value, item id, system id, system kind[, annotator]), one per judgment
    (the annotator where the protocol correlates each apart); `scores`: caption id -> metric score."""
    if not rows:
        return []
    human_values = [row[1] for row in rows]
    metric_values = [_number(scores.get(row[0])) for row in rows]
    cluster_ids = [row[2] for row in rows]
    human = np.array(human_values, dtype=float)
    metric = np.array(metric_values, dtype=float)
    if chosen.metric_decimals is not None:  # the tie rate of the scores the statistics compare
        metric = np.round(metric, chosen.metric_decimals)
    kept = ~np.isnan(metric)
    if kept.sum() < 3:
        return []
    counts = pair_counts(human[kept], metric[kept])
    tie_rate = (counts.tied_metric + counts.tied_both) / counts.pairs if counts.pairs else None
    annotators = [row[5] for row in rows] if chosen.per_annotator else None
    intervals, draws = rating_cells_with_draws(chosen, human_values, metric_values, cluster_ids, annotators)
    cells = [
        {
            "dimension": dimension,
            "statistic": statistic,
            "protocol": chosen.key,
            "value": _finite(interval.value),
            "low": _finite(interval.low),
            "high": _finite(interval.high),
            "n": int(kept.sum()),
            "left_out": int((~kept).sum()),
            "tie_rate": tie_rate,
            "draws": draws[statistic],
            "detail": {"replicates": interval.replicates, "resample": chosen.resample},
        }
        for statistic, interval in intervals.items()
    ]
    return cells + (_system_cells(dimension, chosen, rows, metric, board) if board is not None else [])


def _system_cells(dimension: str, chosen: Protocol, rows: list, metric: np.ndarray, board: BoardNumbers) -> list[dict]:
    """Where the rows hold real systems (not one mixed pool): each system's mean rating against its
    number as the captioner board forms it (scoring.services.numbers), ranked; both over the
    captions compared (a held-out split's only). A caption the metric failed on keeps its ratings
    (the people's side) and is left out of the system's number, as on the board."""
    real = np.array([row[4] in REAL_SYSTEMS and row[0] in board.captions for row in rows])
    systems = np.array([row[3] for row in rows])
    if len(set(systems[real].tolist())) < MIN_SYSTEMS or np.isnan(metric[real]).all():
        return []
    scored = board.rows()
    if scored is None or len(set(scored.systems.tolist()) & set(systems[real].tolist())) < MIN_SYSTEMS:
        return []
    judged = JudgedRows(
        np.array([row[1] for row in rows], dtype=float)[real], systems[real], np.array([row[2] for row in rows])[real]
    )
    intervals = system_level_cells(
        judged, scored, board.metric, sign=board.sign, replicates=chosen.replicates, seed=chosen.seed
    )
    count = len(set(judged.systems.tolist()) & set(scored.systems.tolist()))
    return [
        {
            "dimension": dimension,
            "statistic": statistic,
            "protocol": chosen.key,
            "level": "system",
            "value": _finite(interval.value),
            "low": _finite(interval.low),
            "high": _finite(interval.high),
            "n": count,
            "left_out": int((real & np.isnan(metric)).sum()),
            "tie_rate": None,
            "detail": {
                "replicates": interval.replicates,
                "resample": chosen.resample,
                "systems": count,
                "metric_number": board.metric.aggregation,  # how each system's number was formed
            },
        }
        for statistic, interval in intervals.items()
    ]


def _pairwise_cells(dataset: Dataset, chosen: Protocol, scores: dict[int, float | None]) -> list[dict]:
    pairs = list(
        PairJudgment.objects.filter(dataset=dataset)
        .exclude(winner__in=["", "tie"])
        .order_by("id")
        .values_list("caption_a", "caption_b", "winner", "category", "item_id")
    )
    return pairwise_cells(chosen, [(scores.get(p[0]), scores.get(p[1]), p[2], p[3] or "all", p[4]) for p in pairs])


def pairwise_cells(chosen: Protocol, pairs: list[tuple]) -> list[dict]:
    """Pairwise accuracy cells (each statistic of `chosen`, with draws) per category and, where
    there are several, their unweighted mean. `pairs`: (metric score of a, of b, the winner people
    chose "a" or "b", category, item id); a pair without both scores is left out and counted."""
    a = np.array([_number(p[0]) for p in pairs], dtype=float)
    b = np.array([_number(p[1]) for p in pairs], dtype=float)
    kept = ~(np.isnan(a) | np.isnan(b))
    winner = np.array([p[2] for p in pairs])
    category = np.array([p[3] for p in pairs])
    items = [p[4] for p in pairs]
    names = sorted(set(category[kept].tolist()))
    groups = [*names, "mean"] if len(names) > 1 else names
    masks = {name: kept & (category == name) for name in names}
    masks["mean"] = kept

    def statistic(weights: np.ndarray | None) -> list[float]:
        per = {}
        for name in names:
            sub = masks[name]
            result = pairwise_accuracy(a[sub], b[sub], winner[sub], None if weights is None else weights[sub])
            per[name] = [result.strict, result.ties_half, result.ties_second]
        per["mean"] = list(np.mean([per[name] for name in names], axis=0))  # the papers' unweighted mean
        return [value for name in groups for value in per[name]]

    intervals, draws = cluster_bootstrap_draws(statistic, items, replicates=chosen.replicates, seed=chosen.seed)
    columns = iter(zip(intervals, draws.T, strict=True))
    cells = []
    for name in groups:
        mask = masks[name]
        ties = int(((a == b) & mask).sum())
        left_out = int((~kept & ((category == name) if name != "mean" else True)).sum())
        for statistic_name in TIE_CONVENTIONS:
            interval, column = next(columns)
            if statistic_name not in chosen.statistics:
                continue
            cells.append(
                {
                    "dimension": name,
                    "statistic": statistic_name,
                    "protocol": chosen.key,
                    "value": _finite(interval.value),
                    "low": _finite(interval.low),
                    "high": _finite(interval.high),
                    "n": int(mask.sum()),
                    "left_out": left_out,
                    "tie_rate": ties / int(mask.sum()) if mask.sum() else None,
                    "draws": column,
                    "detail": {"replicates": interval.replicates, "metric_ties": ties},
                }
            )
    return cells


def _number(value: float | None) -> float:
    return np.nan if value is None else value


def _finite(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def dataset_significance(*, dataset: Dataset, alpha: float = 0.05) -> list:
    """For every caption-level column of the dataset's boards: the metrics (newest version each)
    sorted best first, the paired-bootstrap p-value matrix, and the significance clusters. The
    public rows hold the metrics everyone may see; each private submitted metric gets rows of its
    own (the public metrics and it, on the same draws), so a private metric never moves a public
    cluster and its owner still sees where it would stand."""
    newest: dict[tuple, tuple] = {}
    rows = (
        CorrelationResult.objects.filter(
            dataset=dataset, level=CorrelationResult.Level.CAPTION, draws__isnull=False, value__isnull=False
        )
        .order_by("metric_version__created_at", "id")
        .values_list("protocol", "dimension", "statistic", "metric_version__metric__slug", "value", "draws__values")
    )
    for protocol, dimension, statistic, slug, value, draws in rows:
        newest[(protocol, dimension, statistic, slug)] = (value, np.frombuffer(bytes(draws), dtype=np.float32))
    columns: dict[tuple, list] = {}
    for (protocol, dimension, statistic, slug), (value, draws) in newest.items():
        columns.setdefault((protocol, dimension, statistic), []).append((value, slug, draws))
    metrics = dict(Metric.objects.filter(slug__in={key[3] for key in newest}).values_list("slug", "pk"))
    public = set(Metric.objects.visible_to(None).filter(slug__in=metrics).values_list("slug", flat=True))
    written: list[tuple[dict, dict]] = []
    for (protocol, dimension, statistic), entries in columns.items():
        shown = [entry for entry in entries if entry[1] in public]
        groups: list[tuple[int | None, list]] = [(None, shown)] if shown else []
        groups += [(metrics[entry[1]], [*shown, entry]) for entry in entries if entry[1] not in public]
        for subject, group in groups:
            key = {"protocol": protocol, "dimension": dimension, "statistic": statistic, "subject_id": subject}
            written.append((key, _clusters(group, protocol, alpha)))
    written.sort(
        key=lambda entry: (
            entry[0]["protocol"],
            entry[0]["dimension"],
            entry[0]["statistic"],
            entry[0]["subject_id"] or 0,
        )
    )
    stale = SignificanceResult.objects.filter(dataset=dataset, level=CorrelationResult.Level.CAPTION)
    with transaction.atomic():  # rows locked in one order by every writer
        results_revision_hold()
        # One writer of a dataset's clusters at a time: another's fresh rows are never taken for stale.
        Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        kept = [
            SignificanceResult.objects.update_or_create(
                dataset=dataset, level=CorrelationResult.Level.CAPTION, **key, defaults=defaults
            )[0]
            for key, defaults in written
        ]
        stale.exclude(pk__in=[result.pk for result in kept]).delete()  # a metric published, withdrawn or gone
    return kept


def _clusters(entries: list, protocol: str, alpha: float) -> dict:
    name, version = protocol_parts(protocol)
    entries = sorted(entries, key=lambda entry: -entry[0])
    p_values = paired_draws_p_values([draws for _, _, draws in entries])
    return {
        "metrics": [slug for _, slug, _ in entries],
        "values": [value for value, _, _ in entries],
        "p_values": [[None if np.isnan(p) else float(p) for p in row] for row in p_values],
        "ranks": significance_clusters([value for value, _, _ in entries], p_values, alpha=alpha),
        "alpha": alpha,
        "protocol_name": name,
        "protocol_version": version,
    }
