"""Live human evaluation: rating campaigns and arenas over submitted systems' captions, what each
annotator was shown and answered, and the results a campaign's refresh stores
(docs/human-evaluation.md)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from catalog.models import Caption, Dataset, Item, System
from catalog.visibility import is_staff


class CampaignQuerySet(models.QuerySet["Campaign"]):
    def visible_to(self, viewer) -> CampaignQuerySet:
        """Campaigns on the datasets everyone may see (a campaign shows only public captions, so its
        page is public like its dataset's board); staff see every one."""
        if is_staff(viewer):
            return self.all()
        return self.filter(dataset__in=Dataset.objects.visible_to(viewer))


class Campaign(models.Model):
    class Mode(models.TextChoices):
        RATING = "rating", "rating (a rubric, one caption at a time)"
        ARENA = "arena", "arena (two captions side by side)"

    class Audience(models.TextChoices):
        SIGNED_IN = "signed_in", "any signed-in user"
        INVITED = "invited", "invited annotators only"

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="campaigns")
    slug = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.RATING)
    rubric_name = models.CharField(max_length=20, default="accr", help_text="accr, thumb or custom")
    rubric = models.JSONField(default=list, help_text="the dimensions shown (campaigns/rubrics.py), frozen at creation")
    systems = models.ManyToManyField(System, related_name="campaigns")
    ratings_wanted = models.PositiveSmallIntegerField(
        default=3, help_text="ratings per caption (rating) or comparisons per image (arena)"
    )
    audience = models.CharField(max_length=10, choices=Audience.choices, default=Audience.SIGNED_IN)
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="campaigns_invited")
    gold_rate = models.FloatField(default=0.1, help_text="share of tasks that are known-answer checks")
    gold_pass = models.FloatField(default=0.7, help_text="gold accuracy below which an annotator is flagged")
    gold_minimum = models.PositiveSmallIntegerField(default=3, help_text="gold answers before anyone is flagged")
    exclude_flagged = models.BooleanField(default=True, help_text="leave flagged annotators' ratings out of results")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    refresh_wanted_at = models.DateTimeField(
        null=True, blank=True, help_text="when its results were last asked to be computed again (an answer, a change)"
    )
    on_board = models.BooleanField(
        default=False,
        db_default=False,
        help_text=(
            "chosen by an organiser as its dataset's captioner board's people column, shown there once it has "
            "enough answers (campaigns.selectors.board_people); the dataset's imported judgments stay until then"
        ),
    )

    objects = CampaignQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset"], condition=models.Q(on_board=True), name="campaign_one_on_board_per_dataset"
            )
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def source(self) -> str:
        """What its ratings are stored under (`Judgment.source`)."""
        return f"campaign:{self.pk}"

    @property
    def protocol_key(self) -> str:
        """The protocol its correlations are stored under: the "live" family (leaderboards' metric board)."""
        return f"campaign-{self.pk}/live@1"

    @property
    def is_arena(self) -> bool:
        return self.mode == self.Mode.ARENA


class Annotation(models.Model):
    """One task given to one annotator and, once answered, their answer: a caption to rate on the
    rubric (rating), or two captions of one image to compare (arena, `caption` shown on the left).
    A gold check shows a `decoy` (a caption of another image of the campaign) whose answer is known:
    it rates in the bottom quarter of the first dimension, or loses to the image's own caption."""

    class Status(models.TextChoices):
        SHOWN = "shown"
        ANSWERED = "answered"
        SKIPPED = "skipped"

    class Winner(models.TextChoices):
        LEFT = "left"
        RIGHT = "right"
        TIE = "tie"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="+")
    other = models.ForeignKey(Caption, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    decoy = models.ForeignKey(
        Caption,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="a gold check's caption of another image (it is `caption` or `other`)",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SHOWN)
    values = models.JSONField(null=True, blank=True, help_text="rating: {dimension: value}")
    winner = models.CharField(max_length=5, choices=Winner.choices, blank=True)
    shown_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["campaign", "annotator", "status"], name="annotation_annotator_status"),
            models.Index(fields=["campaign", "status"], name="annotation_campaign_status"),
        ]
        constraints = [
            # One open task per annotator and campaign: a reload shows the same one again.
            models.UniqueConstraint(
                fields=["campaign", "annotator"], condition=models.Q(status="shown"), name="annotation_one_open"
            )
        ]

    def __str__(self) -> str:
        return f"annotation {self.pk} of campaign {self.campaign_id}"

    @property
    def is_gold(self) -> bool:
        return self.decoy_id is not None

    @property
    def seconds(self) -> float | None:
        if self.answered_at is None:
            return None
        return (self.answered_at - self.shown_at).total_seconds()


class AccountAddress(models.Model):
    """A keyed digest of a client address an account signed in or annotated from (never the
    address itself): accounts that share one recently are taken for one person, who may not rate
    the other's captions (the sock-puppet rule, campaigns.services.assignment)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64)
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "digest"], name="account_address_unique")]
        indexes = [models.Index(fields=["digest", "last_seen"], name="account_address_digest")]

    def __str__(self) -> str:
        return f"address of user {self.user_id}"


class CampaignResults(models.Model):
    """What a campaign's last refresh computed (campaigns.services.results): agreement per
    dimension, annotator quality, the people column's numbers per system; read by its page, the API
    and the captioner board."""

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="results")
    payload = models.JSONField(default=dict)
    as_of = models.DateTimeField(null=True, help_text="when the snapshot these results were computed from was taken")
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"results of campaign {self.campaign_id}"
