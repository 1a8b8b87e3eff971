"""Signals submissions send."""

from django.dispatch import Signal

# Sent (after commit) when a submission is created, withdrawn or changes visibility, with `dataset_id`.
submission_changed = Signal()
