"""Corpus contexts (CIDEr-D's document frequencies over a caption set's references): built once,
kept in the database for every worker and every later submission on the same items, and in memory
for the batches of one worker process."""

from __future__ import annotations

import pickle
from collections import OrderedDict

from django.db import IntegrityError, transaction

from evaluation.metrics import Metric
from scoring.models import CorpusContext, EvaluationJob
from scoring.services.rows import caption_multiplicity, caption_rows

_MEMORY: OrderedDict[str, object] = OrderedDict()
MEMORY_SIZE = 8


def job_context(job: EvaluationJob, metric: Metric) -> object:
    """The context of `job.context_key`, building it from every caption of the job if no one has
    (only then are the job's captions read: a batch whose process holds the context asks nothing)."""
    key = job.context_key
    if key in _MEMORY:
        _MEMORY.move_to_end(key)
        return _MEMORY[key]
    stored = CorpusContext.objects.filter(key=key).values_list("payload", flat=True).first()
    if stored is not None:
        context = pickle.loads(bytes(stored))
    else:
        caption_ids = [i for ids in job.batches.order_by("index").values_list("caption_ids", flat=True) for i in ids]
        rows = [job_row.row for job_row in caption_rows(caption_ids, media="media" in metric.needs)]
        expanded = [
            row for row, times in zip(rows, caption_multiplicity(caption_ids), strict=True) for _ in range(times)
        ]
        context = metric.corpus_context(expanded)
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
