"""What a captioner's `Submission` (submissions.models) and a metric researcher's `MetricSubmission`
(workbench.models) share: someone owns it, it is public or private, and it may be withdrawn, for
good. The one visibility rule reads these fields (catalog.visibility.submission_q); `visible_to`
applies it to either kind."""

from __future__ import annotations

from typing import Self, TypeVar

from django.conf import settings
from django.db import models

from catalog.visibility import WITHDRAWN, submission_q

U = TypeVar("U", bound="OwnedUpload")


class OwnedUploadQuerySet(models.QuerySet[U]):
    def visible_to(self, viewer) -> Self:
        """Public and not withdrawn, the viewer's own, or every one for staff (catalog.visibility)."""
        return self.filter(submission_q(viewer))


class OwnedUpload(models.Model):
    WITHDRAWN = WITHDRAWN  # each kind's `Status.WITHDRAWN`: final

    # related_name: `user.submissions`, `user.metricsubmissions`
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="%(class)ss")
    is_public = models.BooleanField(default=False)
    # Each kind declares it again with its own `Status` choices, WITHDRAWN among them.
    status = models.CharField(max_length=10, db_index=True)

    objects = OwnedUploadQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def is_withdrawn(self) -> bool:
        return self.status == self.WITHDRAWN

    @property
    def name(self) -> str:
        """What its owner calls it on pages and in messages."""
        raise NotImplementedError
