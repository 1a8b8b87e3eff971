"""What the account page shows of its owner: their work in counts, and their two-factor state."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from accounts.services.two_factor import confirmed_device, is_verified, staff_verification_required
from campaigns.models import Annotation
from catalog.visibility import published_q
from submissions.models import Submission
from workbench.models import MetricSubmission


@dataclass(frozen=True)
class AccountPage:
    user: User
    submissions: int
    public_submissions: int
    metrics: int
    public_metrics: int
    answers: int
    has_token: bool
    two_factor_enrolled: bool
    two_factor_verified: bool
    two_factor_required: bool


def account_page(*, user: User) -> AccountPage:
    submissions = Submission.objects.filter(owner=user)
    metrics = MetricSubmission.objects.filter(owner=user)
    return AccountPage(
        user=user,
        submissions=submissions.count(),
        public_submissions=submissions.filter(published_q()).count(),
        metrics=metrics.count(),
        public_metrics=metrics.filter(published_q()).count(),
        answers=Annotation.objects.filter(annotator=user).exclude(status=Annotation.Status.SHOWN).count(),
        has_token=Token.objects.filter(user=user).exists(),
        two_factor_enrolled=user.is_staff and confirmed_device(user) is not None,
        two_factor_verified=is_verified(user),
        two_factor_required=staff_verification_required(user),
    )
