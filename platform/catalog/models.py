"""Benchmark content: datasets, their media, items, candidate captions and human judgments."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from catalog.visibility import blinded_q, caption_q, is_staff, own_q, submitted_q, visible_q


def ranked_q(*, to_system: str = "") -> Q:
    """The systems a captioner board ranks, over the path `to_system`: every submission's but the
    withdrawn, the dataset's own captioning models and human references, and the baselines (not
    the dataset's other caption sources). Counts of "systems" use it too, so a page never counts
    what the board does not show."""
    own_ranked = own_q(to_system=to_system) & Q(**{f"{to_system}kind__in": ["model", "human"]})
    return submitted_q(to_system=to_system) | own_ranked | Q(**{f"{to_system}is_baseline": True})


class DatasetQuerySet(models.QuerySet["Dataset"]):
    def visible_to(self, viewer) -> DatasetQuerySet:
        """Public datasets (the same for every viewer: staff work on the others in the admin)."""
        return self.filter(is_public=True)


class SystemQuerySet(models.QuerySet["System"]):
    def visible_to(self, viewer) -> SystemQuerySet:
        return self.filter(visible_q(viewer))

    def own(self) -> SystemQuerySet:
        """The dataset's own systems: none of them came from a submission."""
        return self.filter(own_q())

    def ranked(self) -> SystemQuerySet:
        """The systems a captioner board ranks (ranked_q)."""
        return self.filter(ranked_q())


class CaptionQuerySet(models.QuerySet["Caption"]):
    def visible_to(self, viewer) -> CaptionQuerySet:
        """The captions of the systems `viewer` may see: what counts and results are made of. A page,
        download, search or API answer that lists captions one by one reads `listed_to`."""
        return self.filter(visible_q(viewer, to_system="system__"))

    def listed_to(self, viewer) -> CaptionQuerySet:
        """The captions `viewer` may read one by one, with their image and system: `visible_to` less
        those of an open campaign's systems (catalog.visibility.caption_q: blind annotation)."""
        return self.filter(caption_q(viewer, blinded=blinded_system_ids(viewer), to_system="system__"))

    def own(self) -> CaptionQuerySet:
        return self.filter(own_q(to_system="system__"))


def blinded_system_ids(viewer=None) -> list[int]:
    """The systems an open campaign rates now (catalog.visibility.blinded_q), as ids: one small
    query, none for staff (nothing is blind to them)."""
    if is_staff(viewer):
        return []
    return list(System.objects.filter(blinded_q()).order_by().values_list("pk", flat=True).distinct())


class JudgmentQuerySet(models.QuerySet["Judgment"]):
    def own(self) -> JudgmentQuerySet:
        """Judgments of the dataset's own captions (imported ones are never of a submission's, but say so)."""
        return self.filter(own_q(to_system="caption__system__"))

    def collected_in(self, source: str) -> JudgmentQuerySet:
        """The judgments one live campaign collected (`source` as Judgment.source names it)."""
        return self.filter(source=source)


class ImportedJudgmentManager(models.Manager["Judgment"]):
    """`Judgment.objects`: the judgments imported with the dataset, the ones every protocol, export,
    item page and board reads. Those a live campaign collected are read through `Judgment.collected`
    (by the campaign that collected them), so they never mix into a source's published protocol."""

    def get_queryset(self) -> JudgmentQuerySet:
        return JudgmentQuerySet(self.model, using=self._db).filter(source="")

    def own(self) -> JudgmentQuerySet:
        return self.get_queryset().own()


class Dataset(models.Model):
    class Modality(models.TextChoices):
        IMAGE = "image"
        VIDEO = "video"

    class Kind(models.TextChoices):
        RATING = "rating", "graded ratings"
        PAIRWISE = "pairwise", "pairwise preferences"
        FOIL = "foil", "foil pairs (known winner)"
        BENCHMARK = "benchmark", "captioner benchmark (references, no judgments)"

    slug = models.SlugField(max_length=100, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    modality = models.CharField(max_length=10, choices=Modality.choices, default=Modality.IMAGE)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.RATING)
    source_format = models.CharField(max_length=40, help_text="importer that produced the content")
    dimensions = models.JSONField(default=list, help_text='judgment dimensions, e.g. ["overall"]')
    rating_scale = models.JSONField(default=dict, blank=True, help_text='e.g. {"min": 1, "max": 4}')
    citation = models.TextField(blank=True)
    licence = models.CharField(max_length=300, blank=True)
    url = models.URLField(blank=True)
    protocol_version = models.CharField(max_length=40, default="1")
    protocol_notes = models.TextField(blank=True, help_text="what the importer applied")
    content_sha256 = models.CharField(
        max_length=64, blank=True, help_text="fingerprint of the imported content (canonical form)"
    )
    is_public = models.BooleanField(default=True)
    references_hidden = models.BooleanField(
        default=False,
        db_default=False,
        help_text=(
            "a hidden test set: its references, human judgments and per-caption scores of reference-based "
            "metrics are shown to staff only (catalog/visibility.py); submitters see system-level numbers"
        ),
    )
    headline_metric = models.SlugField(
        max_length=100,
        # A database default too: code that predates the field (an older migration state, a rolling
        # deploy's previous release) inserts datasets without it.
        default="cider_d",
        db_default="cider_d",
        help_text="the metric the captioner board is sorted by at first (a registered metric's slug)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DatasetQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    # The human-judgment dimension a board's "people" column shows, the first of these the dataset has.
    PEOPLE_DIMENSIONS = ("total", "overall", "human")

    @property
    def is_benchmark(self) -> bool:
        """A captioner benchmark: references to caption against, no human judgments of captions."""
        return self.kind == self.Kind.BENCHMARK

    @property
    def people_dimension(self) -> str | None:
        """The dimension of its systems' human ratings the captioner board shows (rating datasets)."""
        if self.kind != self.Kind.RATING or not self.dimensions:
            return None
        return next((d for d in self.PEOPLE_DIMENSIONS if d in self.dimensions), self.dimensions[0])


class Media(models.Model):
    """An image or video of a dataset. Declared from the dataset (and its manifest) before any file
    is present; attaching a file stores it content-addressed by sha256."""

    class Kind(models.TextChoices):
        IMAGE = "image"
        VIDEO = "video"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="media")
    name = models.CharField(max_length=300, help_text="file name as the dataset refers to it")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.IMAGE)
    expected_md5 = models.CharField(max_length=32, blank=True, help_text="from the manifest")
    manifest_path = models.CharField(max_length=500, blank=True)
    sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    stored_path = models.CharField(
        max_length=300,
        blank=True,
        help_text="its name in the file store (plumbing/storage.py); empty while only declared",
    )
    attached_at = models.DateTimeField(null=True, blank=True)
    url = models.URLField(
        max_length=500,
        blank=True,
        help_text="where its publisher serves it: pages show it from there until a file is stored "
        "(docs/datasets.md, media by URL); its sha256 is pinned by the first fetch",
    )
    width = models.PositiveIntegerField(null=True, blank=True, help_text="pixels, once a file was read")
    height = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "name"], name="media_unique_name_per_dataset")]
        ordering = ["dataset", "name"]
        verbose_name_plural = "media"

    def __str__(self) -> str:
        return f"{self.dataset.slug}:{self.name}"

    @property
    def is_available(self) -> bool:
        return bool(self.stored_path)


class Item(models.Model):
    """One entry of a dataset: an image or video with its reference captions."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=300)
    media = models.ForeignKey(Media, on_delete=models.SET_NULL, null=True, blank=True, related_name="items")
    references = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "external_id"], name="item_unique_external_id_per_dataset")
        ]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.dataset_id}:{self.external_id}"


class System(models.Model):
    """Who wrote a caption: a captioning model, people, or a submitted captioner."""

    class Kind(models.TextChoices):
        MODEL = "model", "captioning model"
        HUMAN = "human", "human-written"
        SUBMISSION = "submission", "submitted captioner"
        MIXED = "mixed", "mixed or unknown origin"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="systems")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.MODEL)
    description = models.TextField(blank=True)
    is_baseline = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SystemQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "slug"], name="system_unique_slug_per_dataset")]
        ordering = ["dataset", "slug"]

    def __str__(self) -> str:
        return self.name


class Caption(models.Model):
    """A candidate caption for an item, written by a system."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="captions")
    # No index of its own: caption_system_order starts with it.
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="captions", db_index=False)
    external_id = models.CharField(
        max_length=300, blank=True, default="", help_text="source id; empty for one caption per item"
    )
    text = models.TextField()
    # The item's dataset, written by the database on every insert (trigger caption_dataset, migration
    # catalog 0006), whatever inserts the row: never set it. It is what lets a page of a dataset's
    # scores be read in caption order from an index (docs/performance.md), not sorted from all of them.
    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="+", null=True, blank=True, editable=False, db_index=False
    )

    objects = CaptionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "system", "external_id"], name="caption_unique_per_item_system")
        ]
        indexes = [
            models.Index(fields=["dataset", "id"], name="caption_dataset_order"),
            models.Index(fields=["system", "id"], name="caption_system_order"),
        ]
        ordering = ["id"]

    def __str__(self) -> str:
        return self.text[:80]


class Judgment(models.Model):
    """One human score of a caption on one dimension (one row per annotator where known): imported
    with the dataset (`source` empty), or collected live by a rating campaign (`source`
    "campaign:<id>", the annotator a pseudonym; docs/human-evaluation.md)."""

    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="judgments")
    dimension = models.CharField(max_length=40)
    annotator = models.CharField(max_length=100, blank=True, default="")
    value = models.FloatField()
    detail = models.JSONField(null=True, blank=True, help_text="e.g. crowd vote counts")
    source = models.CharField(
        max_length=40,
        blank=True,
        default="",
        db_default="",
        help_text='"" imported with the dataset; "campaign:<id>" collected by a live rating campaign',
    )

    # The first manager is the default one (and the related managers' class): imported judgments only.
    objects = ImportedJudgmentManager()
    collected = JudgmentQuerySet.as_manager()  # every judgment, a campaign's among them: filter by source

    class Meta:
        base_manager_name = "collected"
        constraints = [
            models.UniqueConstraint(
                fields=["caption", "dimension", "annotator", "source"], name="judgment_unique_per_annotator"
            )
        ]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.dimension} {self.value:g} on caption {self.caption_id}"


class PairJudgment(models.Model):
    """A human preference between two captions of one item (Pascal-50S, FOIL)."""

    class Winner(models.TextChoices):
        A = "a"
        B = "b"
        TIE = "tie"
        UNKNOWN = "", "votes only"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="pairs")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="pairs")
    external_id = models.CharField(max_length=100)
    caption_a = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="pairs_as_a")
    caption_b = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="pairs_as_b")
    category = models.CharField(max_length=40, blank=True)
    winner = models.CharField(max_length=3, choices=Winner.choices, blank=True)
    votes_a = models.PositiveIntegerField(null=True, blank=True)
    votes_b = models.PositiveIntegerField(null=True, blank=True)
    references = models.JSONField(
        null=True, blank=True, help_text="a fixed reference draw that the source ships with the pair"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "external_id"], name="pair_unique_per_dataset")]
        ordering = ["id"]

    def __str__(self) -> str:
        return f"pair {self.caption_a_id} / {self.caption_b_id}: {self.winner or 'votes'}"


class ImportRecord(models.Model):
    """What each `datasets import` did: kept so a dataset page can say where its content came from."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="imports")
    source_format = models.CharField(max_length=40)
    source_path = models.CharField(max_length=500)
    content_sha256 = models.CharField(max_length=64)
    changed = models.BooleanField()
    counts = models.JSONField(default=dict)
    seconds = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.source_format} import of dataset {self.dataset_id}"
