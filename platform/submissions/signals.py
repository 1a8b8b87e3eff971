"""Sent (after commit) when a submission is created, withdrawn or changes visibility."""
from django.dispatch import Signal

submission_changed = Signal()
