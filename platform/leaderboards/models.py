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


class CitableSnapshot(models.Model):
    """A board frozen for citation: what anonymous visitors saw at `created_at`, numbered per board
    (1, 2, …), with what the numbers were computed from (`provenance`). Never changed after it is
    made: `save` refuses an update, and a database trigger refuses any UPDATE (migration 0003)."""

    class Board(models.TextChoices):
        CAPTIONER = "captioner", "captioner board"
        METRIC = "metric", "metric board"

    board = models.CharField(max_length=10, choices=Board.choices)
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, null=True, blank=True, related_name="citable_snapshots"
    )
    number = models.PositiveIntegerField(help_text="1, 2, … per board")
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, help_text="the staff member who froze it (their username)")
    note = models.TextField(blank=True, help_text="why it was frozen (e.g. the paper it is for)")
    payload = models.JSONField(help_text="the board's JSON as the API gave it to anonymous visitors")
    provenance = models.JSONField(help_text="metric versions, protocol versions and data fingerprints")
    digest = models.CharField(max_length=64, help_text="sha256 of the payload and provenance (canonical JSON)")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["board", "dataset", "number"], name="citable_snapshot_number", nulls_distinct=False
            ),
            models.CheckConstraint(
                condition=models.Q(board="metric", dataset__isnull=True)
                | models.Q(board="captioner", dataset__isnull=False),
                name="citable_snapshot_board_dataset",
            ),
        ]
        ordering = ["board", "dataset_id", "number"]

    def __str__(self) -> str:
        return f"{self.board} board snapshot {self.number}" + (
            f" of dataset {self.dataset_id}" if self.dataset_id else ""
        )

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ValueError("a citable snapshot is never changed: freeze a new one")
        super().save(*args, **kwargs)
