"""What people read in place of the store's keys (scoring/labels.py)."""

from __future__ import annotations

import pytest

from capbench_eval.metaeval.protocols import PROTOCOLS
from scoring.labels import PROTOCOL_DATASETS, family_label, protocol_label, protocol_name_label, statistic_label


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("flickr8k-expert/canonical@1", "Flickr8k-Expert · canonical protocol (v1)"),
        ("flickr8k-expert/paper@1", "Flickr8k-Expert · paper protocol (v1)"),
        ("thumb/paper@2", "THumB · paper protocol (v2)"),
        ("spring-ratings/live@1", "spring-ratings · live campaign (v1)"),
        ("paper", "paper protocol"),
        ("not a key", "not a key"),
    ],
)
def test_a_protocol_key_reads_as_its_dataset_name_and_version(key, label):
    assert protocol_label(key) == label


def test_every_protocols_dataset_has_its_papers_name():
    assert {protocol.dataset for protocol in PROTOCOLS.values()} <= set(PROTOCOL_DATASETS)


def test_families_and_statistics_in_words():
    assert family_label("ngram") == "Word overlap (n-grams, METEOR)"
    assert family_label("some_new_family") == "Some new family"
    assert statistic_label("tau_c") == "Kendall τ-c"
    assert statistic_label("odd") == "odd"
    assert protocol_name_label("canonical") == "canonical protocol"
    assert protocol_name_label("live") == "live campaign"
