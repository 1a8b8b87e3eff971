"""Stored corpus contexts read back, also those pickled before the metrics library's package was
renamed from `evaluation` to `capbench_eval`."""

import pickle

from capbench_eval.metrics import CaptionRow, get
from capbench_eval.metrics.ngram.cider import CiderContext
from scoring.services.contexts import stored_context


def test_a_context_pickled_under_the_old_package_name_reads_back_as_the_same_context():
    rows = [
        CaptionRow("a", "a dog runs", ("a dog is running", "the dog runs")),
        CaptionRow("b", "a cat", ("a cat sits",)),
    ]
    context = get("cider_d").corpus_context(rows)
    old = pickle.dumps(context, protocol=0).replace(b"capbench_eval.", b"evaluation.")
    assert b"evaluation.metrics" in old
    assert b"capbench_eval" not in old
    read = stored_context(old)
    assert isinstance(read, CiderContext)
    assert get("cider_d").score(rows, read).scores == get("cider_d").score(rows, context).scores


def test_a_context_stored_now_reads_back():
    rows = [CaptionRow("a", "a dog runs", ("a dog is running",))]
    context = get("cider_d").corpus_context(rows)
    read = stored_context(pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL))
    assert isinstance(read, CiderContext)
