"""The captioner board, the per-caption scores, a comparison of two systems and the metric board."""

from __future__ import annotations

from rest_framework import serializers

from api.documentation.base import Number, Schema
from campaigns.models import Campaign
from leaderboards.metric_board import LEVELS, ORDERS


class BoardCell(Number):
    state = serializers.CharField(help_text="`value`, or why there is no number (`missing`, `failed`, …)")
    rank = serializers.IntegerField(
        required=False, help_text="its rank by this column, where the board is sorted by it"
    )
    note = serializers.CharField(required=False, help_text="the job's error (staff only)")
    signature = serializers.CharField(
        required=False,
        help_text="the signature of the metric version this number was computed with, where it is not its "
        "column's (the previous version's number, shown while the current one is computed)",
    )


class BoardMetric(Schema):
    slug = serializers.CharField()
    name = serializers.CharField()
    family = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    points = serializers.FloatField(help_text="what the pages multiply a value by (100 for 0–1 metrics)")
    aggregation = serializers.ChoiceField(
        choices=["mean", "corpus"],
        help_text="a system's number: the mean of its per-caption scores, or the corpus statistic of their summed "
        "statistics (BLEU, METEOR)",
    )
    signature = serializers.CharField(
        allow_blank=True,
        help_text="the readable signature of the metric version the column's numbers are computed with "
        "(docs/library.md, Signatures); empty before the metric has a version",
    )


class IntegrityFlag(Schema):
    flag = serializers.ChoiceField(
        choices=["copies_references", "near_empty", "constant"],
        help_text='what the integrity checks at upload found (docs/datasets.md §6, "Integrity checks")',
    )
    share = serializers.FloatField(help_text="the share of its captions concerned (0–1)")
    threshold = serializers.FloatField(help_text="the share from which it is flagged (`constant`: above which)")
    exact = serializers.FloatField(required=False, help_text="`copies_references` only: the share copied word for word")
    words = serializers.CharField(help_text="what was found, in a sentence")


class BoardSystem(Schema):
    rank = serializers.IntegerField(allow_null=True)
    system = serializers.CharField(help_text="the system's slug")
    name = serializers.CharField()
    kind = serializers.CharField()
    baseline = serializers.BooleanField()
    paper_url = serializers.CharField(allow_blank=True)
    code_url = serializers.CharField(allow_blank=True)
    submitted_by = serializers.CharField(
        allow_null=True, help_text="the submitter's user name; null: the dataset's own"
    )
    submitted_at = serializers.DateTimeField(
        allow_null=True, help_text="when it was submitted; null: the dataset's own"
    )
    flags = IntegrityFlag(many=True, help_text="what the integrity checks at upload found (empty: nothing)")
    people = BoardCell(required=False, help_text="what people said of it (a human-evaluation board)")
    scores = serializers.DictField(child=BoardCell(), help_text="per metric slug")


class PeopleCampaign(Schema):
    slug = serializers.CharField(help_text="its page: /campaigns/<slug>/")
    title = serializers.CharField()
    mode = serializers.ChoiceField(choices=Campaign.Mode.choices)


class PeopleSource(Schema):
    shows = serializers.CharField(help_text="what the column shows: a judgment dimension, or a campaign's label")
    kind = serializers.ChoiceField(
        choices=["judgments", "campaign"],
        help_text="the dataset's imported judgments, or a live campaign an organiser chose for the board",
    )
    who = serializers.CharField(help_text="whose ratings, in words")
    ratings = serializers.IntegerField(help_text="ratings (or an arena's comparisons) the column is made of")
    alpha = Number(allow_null=True, help_text="Krippendorff's α between annotators, with its 95% interval")
    alpha_note = serializers.CharField(allow_blank=True, help_text="why there is no α")
    campaign = PeopleCampaign(allow_null=True)


class CaptionScore(Schema):
    value = serializers.FloatField(allow_null=True, help_text="the metric's own scale; null: no number")
    points = serializers.FloatField(allow_null=True, help_text="as the pages show it")
    error = serializers.CharField(allow_blank=True)


class CaptionScores(Schema):
    """A caption's row of the per-caption scores' `layout=wide`."""

    caption_id = serializers.IntegerField()
    item = serializers.CharField()
    system = serializers.CharField()
    caption = serializers.CharField()
    scores = serializers.DictField(child=CaptionScore(), help_text="per metric slug")


class CaptionerBoard(Schema):
    dataset = serializers.CharField()
    domain = serializers.CharField(allow_null=True, help_text="the image subset the numbers are over (null: all)")
    headline_metric = serializers.CharField(allow_blank=True)
    sorted_by = serializers.CharField(allow_null=True, help_text="the column the ranks are by (a metric or `people`)")
    people_dimension = serializers.CharField(
        allow_null=True, help_text="what the people column shows: a judgment dimension, or a live campaign's label"
    )
    people_campaign = PeopleCampaign(allow_null=True, help_text="the live campaign the people column comes from")
    people_column = PeopleSource(allow_null=True, help_text="whose ratings the people column shows, how many, α")
    people_pending = serializers.CharField(
        allow_null=True, help_text="a campaign chosen for the people column that is not eligible yet, and why"
    )
    metrics = BoardMetric(many=True)
    systems = BoardSystem(many=True)


class Difference(Number):
    p = serializers.FloatField(
        allow_null=True, help_text="two-sided paired-bootstrap p-value (0: below 2 / replicates, what they resolve)"
    )
    replicates = serializers.IntegerField(help_text="bootstrap replicates with a finite difference")
    images = serializers.IntegerField(help_text="the images the difference is over (both systems scored)")
    better = serializers.ChoiceField(
        choices=["a", "b"], allow_null=True, help_text="the better system where the interval excludes 0"
    )


class ComparedMetric(Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    aggregation = serializers.CharField(help_text="how each number and the difference are formed")
    a = Number(allow_null=True, help_text="system A's number as the board shows it")
    b = Number(allow_null=True)
    difference = Difference(allow_null=True, help_text="a − b on the shared images (null: not compared)")
    reason = serializers.CharField(allow_blank=True, help_text="why there is no difference, in words")


class Comparison(Schema):
    dataset = serializers.CharField()
    a = serializers.CharField(help_text="system A's slug")
    b = serializers.CharField()
    images = serializers.IntegerField(help_text="images both systems captioned")
    metrics = ComparedMetric(many=True)


class CampaignName(Schema):
    slug = serializers.CharField(help_text="its page: /campaigns/<slug>/")
    title = serializers.CharField()


class MetricBoardColumn(Schema):
    key = serializers.CharField(help_text="what `?sort=` names it by")
    dataset = serializers.CharField()
    dimension = serializers.CharField()
    statistic = serializers.CharField()
    protocol = serializers.CharField(help_text="the protocol's key, e.g. `flickr8k-expert/paper@1`")
    campaign = CampaignName(allow_null=True, help_text="a live column's campaign (null for the others)")


class MetricBoardCell(Number):
    """A correlation (−1 to 1; an accuracy 0 to 1), and in `points` ×100 as the board shows it."""

    n = serializers.IntegerField(allow_null=True)
    rank = serializers.IntegerField(allow_null=True, help_text="significance cluster (1 = best), paper protocol only")
    published = serializers.FloatField(
        required=False, help_text="the papers' number (×100) for the same rows, where they report one"
    )


class SubmittedBy(Schema):
    owner = serializers.CharField()
    paper_url = serializers.CharField(allow_blank=True)
    code_url = serializers.CharField(allow_blank=True)
    private = serializers.BooleanField(help_text="only the caller sees it")
    trained_on = serializers.ListField(child=serializers.CharField())


class MetricBoardRow(Schema):
    metric = serializers.CharField()
    family = serializers.CharField()
    signature = serializers.CharField(allow_blank=True, help_text="the metric's current version's signature")
    submitted = SubmittedBy(allow_null=True)
    cells = serializers.ListField(child=MetricBoardCell(allow_null=True), help_text="one per column")


class MetricBoard(Schema):
    protocol = serializers.CharField()
    level = serializers.ChoiceField(choices=list(LEVELS))
    sort = serializers.CharField(allow_null=True, help_text="the key of the column ranking the metrics, or `metric`")
    order = serializers.ChoiceField(choices=list(ORDERS), help_text="which way the sorted values run")
    columns = MetricBoardColumn(many=True)
    metrics = MetricBoardRow(many=True)
