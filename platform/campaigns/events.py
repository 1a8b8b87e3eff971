"""What campaigns tell the apps above them (leaderboards), by signal (docs/architecture.md)."""

from django.dispatch import Signal

# A campaign's results were computed again: the dataset's captioner board shows them (people column).
# Sent after commit with `dataset_id` and `campaign_id`.
results_changed = Signal()
