"""Corpus contexts (CIDEr-D's document frequencies over a caption set's references): built once,
kept in the database for every worker and every later submission on the same items, and in memory
for the batches of one worker process.

Which captions form a corpus is the job's corpus rule (`job_corpus`): a submission's captions are
one corpus, as COCO's toolkit scores a results file; a dataset's own candidates follow its paper
protocol (capbench_eval.metaeval.protocols, CORPORA; docs/metaeval.md §7.7): one corpus of every
judgment row, one of every candidate, or one per system. A job of several parts keeps a context
per part (a dict by part name) and scores each caption in its part's."""

from __future__ import annotations

import io
import pickle
from collections import OrderedDict
from collections.abc import Sequence

from django.db import IntegrityError, transaction

from capbench_eval.metaeval.protocols import CORPUS_SYSTEM, dataset_protocols_of
from capbench_eval.metrics import Metric, MetricResult
from scoring.models import CorpusContext, EvaluationJob
from scoring.services.rows import JobRow, caption_corpora, caption_rows, context_rule, corpus_parts

_MEMORY: OrderedDict[str, object] = OrderedDict()
MEMORY_SIZE = 8


def job_corpus(job: EvaluationJob) -> str:
    """The corpus rule the job's context key was planned under (a rule changed since does not
    change a planned job's corpus), or for a key from before keys named it, `corpus_rule_now`."""
    planned = context_rule(job.context_key)
    return corpus_rule_now(job) if planned is None else planned[0]


def corpus_rule_now(job: EvaluationJob) -> str:
    """The corpus rule a job planned now gets: a submission's own captions (as COCO's toolkit
    scores a results file), a dataset's own candidates its paper protocol's rule."""
    if job.purpose != EvaluationJob.Purpose.DATASET:
        return CORPUS_SYSTEM
    dataset = job.dataset
    return dataset_protocols_of(dataset.source_format, dataset.slug, dataset.kind)[0].corpus.rule


def row_parts(job: EvaluationJob, caption_ids: list[int]) -> list[str]:
    """Each caption's part of the job's corpus: "" where the corpus has one part (a key from before
    keys named their rule is of one part: CIDEr-D version 1, whose batches a version-2 worker
    refuses before reading this), else the part's name (one query)."""
    planned = context_rule(job.context_key)
    if planned is None or not planned[1]:
        return [""] * len(caption_ids)
    return [part for part, _ in caption_corpora(caption_ids, planned[0])]


def reuse_context(job: EvaluationJob, part: str) -> str:
    """A caption's corpus context as its score's reuse key names it: the job's context key, and the
    caption's part where there are several (two systems' identical captions are not the same work
    when each system is its own corpus)."""
    return f"{job.context_key}/{part}" if part else job.context_key


class _StoredContext(pickle.Unpickler):
    """A stored context, also one pickled before the metrics library's package was renamed from
    `evaluation` to `capbench_eval` (issue 41): its classes are looked up under the new name."""

    def find_class(self, module: str, name: str):
        if module == "evaluation" or module.startswith("evaluation."):
            module = "capbench_eval" + module.removeprefix("evaluation")
        return super().find_class(module, name)


def stored_context(payload: bytes) -> object:
    """A CorpusContext's payload read back."""
    return _StoredContext(io.BytesIO(payload)).load()


def job_context(job: EvaluationJob, metric: Metric) -> object:
    """The context of `job.context_key`, building it from every caption of the job if no one has
    (only then are the job's captions read: a batch whose process holds the context asks nothing).
    One part: the metric's context; several: a dict of them by part name."""
    key = job.context_key
    if key in _MEMORY:
        _MEMORY.move_to_end(key)
        return _MEMORY[key]
    stored = CorpusContext.objects.filter(key=key).values_list("payload", flat=True).first()
    if stored is not None:
        context = stored_context(bytes(stored))
    else:
        caption_ids = [i for ids in job.batches.order_by("index").values_list("caption_ids", flat=True) for i in ids]
        job_rows = caption_rows(caption_ids, media="media" in metric.needs)
        parts = corpus_parts(job_rows, caption_corpora(caption_ids, job_corpus(job)))
        contexts = {part: metric.corpus_context(rows) for part, rows in parts.items()}
        context = next(iter(contexts.values())) if len(contexts) == 1 else contexts
        try:
            with transaction.atomic():
                CorpusContext.objects.create(
                    key=key,
                    metric_version=job.metric_version,
                    payload=pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL),
                )
        except IntegrityError:
            pass  # another worker stored the same context first
    _MEMORY[key] = context
    while len(_MEMORY) > MEMORY_SIZE:
        _MEMORY.popitem(last=False)
    return context


def job_score(job: EvaluationJob, metric: Metric, job_rows: Sequence[JobRow], parts: Sequence[str]) -> MetricResult:
    """The metric's result on a batch's rows, a corpus-dependent metric in its job's context, each
    row in its part's (`parts`, row_parts of the rows): one result, in the order of `job_rows`."""
    rows = [job_row.row for job_row in job_rows]
    if not metric.corpus_dependent:
        return metric.score(rows)
    context = job_context(job, metric)
    if not isinstance(context, dict):
        return metric.score(rows, context)
    by_part: dict[str, list[int]] = {}
    for index, part in enumerate(parts):
        by_part.setdefault(part, []).append(index)
    missing = sorted(set(by_part) - set(context))
    if missing:
        raise LookupError(f"the job's corpus context has no part {missing[0]!r} (its captions changed since planning)")
    results = {
        part: (indices, metric.score([rows[i] for i in indices], context[part])) for part, indices in by_part.items()
    }
    return _merged(results, len(rows))


def _merged(results: dict[str, tuple[list[int], MetricResult]], size: int) -> MetricResult:
    """The parts' results as one, in the batch's order (no corpus number: the board forms it)."""
    scores: list = [None] * size
    details: list | None = [None] * size if all(r.details for _, r in results.values()) else None
    statistics: list | None = [None] * size if all(r.statistics for _, r in results.values()) else None
    for indices, result in results.values():
        for at, index in enumerate(indices):
            scores[index] = result.scores[at]
            if details is not None and result.details:
                details[index] = result.details[at]
            if statistics is not None and result.statistics:
                statistics[index] = result.statistics[at]
    return MetricResult(scores=scores, corpus=None, details=details, statistics=statistics)
