"""Precomputed boards."""

from django.db import models

from catalog.models import Dataset


class BoardSnapshot(models.Model):
    """The captioner board of a dataset as served: every eligible system's cells, with the flags
    that decide who may see a row. Rebuilt by `board_refresh`."""

    dataset = models.OneToOneField(Dataset, on_delete=models.CASCADE, related_name="board_snapshot")
    payload = models.JSONField()
    digests = models.JSONField(
        default=dict,
        help_text="digests of the payload's parts (snapshots.payload_digests): a board's validator without reading it",
    )
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"board of dataset {self.dataset_id} at {self.computed_at:%Y-%m-%d %H:%M}"
