"""What people read in place of the store's keys: a protocol key ("flickr8k-expert/canonical@1"),
a metric family ("ngram"), a statistic ("tau_c"). One place, so that every page says it the same
way; the templates use it through the `labels` filters (leaderboards/templatetags/labels.py) and
keep the raw key inside a "technical details" toggle where someone may need it."""

from __future__ import annotations

from scoring.models import protocol_parts

# Families as evaluation/capbench_eval/metrics/*/ declare them. "ngram" holds METEOR too (unigram matches with
# stems and synonyms), so it is named for word overlap, not for n-grams alone.
FAMILIES = {
    "ngram": "Word overlap (n-grams, METEOR)",
    "embedding": "Embedding similarity",
    "graph": "Scene graphs",
    "judge": "Language-model judges",
    "cycle": "Text-to-image round trip",
    "region": "Image regions",
    "submitted": "Submitted by their authors",
}

# The protocols' datasets (evaluation/capbench_eval/metaeval/protocols.py, by importer format) as their papers write them.
PROTOCOL_DATASETS = {
    "flickr8k-expert": "Flickr8k-Expert",
    "flickr8k-cf": "Flickr8k-CF",
    "msvd-eval": "MSVD-Eval",
    "thumb": "THumB",
    "pascal50s": "PASCAL-50S",
    "polaris": "Polaris",
    "nebula": "Nebula",
    "composite": "Composite",
    "foil": "FOIL",
    "vatex-eval": "VATEX-EVAL",
}

PROTOCOL_NAMES = {
    "paper": "paper protocol",
    "canonical": "canonical protocol",
    "live": "live campaign",
}

STATISTICS = {
    "tau_b": "Kendall τ-b",
    "tau_c": "Kendall τ-c",
    "pearson": "Pearson r",
    "spearman": "Spearman ρ",
    "accuracy": "accuracy",
    "accuracy_ties_half": "accuracy (ties count half)",
    "accuracy_ties_second": "accuracy (ties go to the second caption)",
}


def family_label(family: str) -> str:
    """A family in words (ngram: "Word overlap (n-grams, METEOR)"); an unknown one as written, capitalised."""
    return FAMILIES.get(family, family.replace("_", " ").capitalize())


def protocol_name_label(name: str) -> str:
    """A protocol's name in words (paper: "paper protocol"), as the metric board's protocol choice."""
    return PROTOCOL_NAMES.get(name, f"{name} protocol" if name else "")


def protocol_label(key: str) -> str:
    """A protocol key in words: flickr8k-expert/canonical@1 is "Flickr8k-Expert · canonical protocol
    (v1)"; a bare name (paper) is "paper protocol"; anything else unchanged."""
    name, version = protocol_parts(key)
    if not name:
        return protocol_name_label(key) if key in PROTOCOL_NAMES else key
    dataset = key.partition("/")[0]
    shown = PROTOCOL_DATASETS.get(dataset, dataset)
    return f"{shown} · {protocol_name_label(name)} (v{version})"


def statistic_label(statistic: str) -> str:
    """A statistic in words (tau_c: "Kendall τ-c"); an unknown one as written."""
    return STATISTICS.get(statistic, statistic)
