"""A metric version's readable signature (docs/library.md, "Signatures"): what a number was computed
with, in one line a paper can print beside it, as sacrebleu's do. The same configuration gives the
same signature here, on every CapBench page, download and API answer, and from `pip install
capbench-eval` on a laptop.

>>> from capbench_eval.metrics import get
>>> signature(get("cider_d"))
'cider_d|v:2|n:4|sigma:6.0|tok:ptb-corenlp-3.4.1|refs:all|df:scored-set|sys:mean|capbench-eval:0.1.0'
>>> signature(get("bleu_4"))
'bleu_4|v:1|order:4|reflen:closest|tok:ptb-corenlp-3.4.1|refs:all|sys:corpus|capbench-eval:0.1.0'

Fields, in order: the metric's slug; `v:` its code version; its configuration (`Metric.config()`:
every choice that moves the numbers, the tokenizer as `tok:`, a model metric's model and weights
hash among them), keys sorted; `refs:` which references it reads (`all` of the item's, or `none`:
reference-free); `df:scored-set` where the per-caption scores depend on the whole set scored
(CIDEr-D's document frequencies come from the results file's references); `sys:` how a system's
number is formed (`mean` of its captions' scores, or the metric's `corpus` statistic); the library
version that computed it."""

from __future__ import annotations

import json
from collections.abc import Mapping

from capbench_eval.metrics.base import Metric
from capbench_eval.version import VERSION

__all__ = ["signature", "signature_of"]

SHORT_KEYS = {"tokenizer": "tok"}


def signature(metric: Metric, *, library: str = VERSION) -> str:
    """The signature of a registered metric as configured here and now."""
    return signature_of(
        metric.slug,
        metric.version,
        metric.config(),
        aggregation=metric.aggregation,
        references="references" in metric.needs,
        corpus_dependent=metric.corpus_dependent,
        library=library,
    )


def signature_of(
    slug: str,
    version: str,
    config: Mapping[str, object],
    *,
    aggregation: str,
    references: bool,
    corpus_dependent: bool,
    library: str = VERSION,
) -> str:
    """The signature of a stored metric version (its slug, version and configuration as stored,
    and the library version that computed it)."""
    fields = [slug, f"v:{version}"]
    fields += [f"{SHORT_KEYS.get(key, key)}:{_value(config[key])}" for key in sorted(config)]
    fields.append(f"refs:{'all' if references else 'none'}")
    if corpus_dependent:
        fields.append("df:scored-set")
    fields.append(f"sys:{aggregation}")
    fields.append(f"capbench-eval:{library}")
    return "|".join(fields)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, str):
        text = value
    elif isinstance(value, int | float):
        text = repr(value)
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text.replace("|", "/")  # one field per "|"
