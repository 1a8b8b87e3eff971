"""What the OpenAPI schema says the API answers where no model serializer does: the shapes of the
boards, progress, results and errors (serializers used for the schema only), and the hook that adds
the error answers every operation can give. tests/platform/api/test_schema.py checks live answers
against the schema, so a change of shape here or in the code fails there."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from api.campaign_serializers import CampaignSerializer
from api.serializers import DatasetSerializer, ItemSerializer
from campaigns.models import Campaign
from leaderboards.captioner import FILTERS
from leaderboards.metric_board import LEVELS, ORDERS, PROTOCOLS, REFERENCES


class _Schema(serializers.Serializer):
    """A shape for the schema only: never used to read or write data."""

    def create(self, validated_data):  # pragma: no cover - never called
        raise NotImplementedError

    def update(self, instance, validated_data):  # pragma: no cover - never called
        raise NotImplementedError


# --- errors -----------------------------------------------------------------------------------


class Problem(_Schema):
    detail = serializers.CharField(help_text="what went wrong, in words")


LOCATED_PROBLEMS = {
    "type": "object",
    "description": (
        "Each problem under the name of the field it is about (`detail`: about the request as a whole): a "
        "message, a list of messages, or for a list field the messages under each position. An uploaded "
        "file's messages name the file, line and field; nothing was stored."
    ),
    "additionalProperties": {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        ]
    },
    "example": {"results": ["results.json: line 3: field `image_id`: no item '999' in dataset demo"]},
}


RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before trying again"}}
ERROR_RESPONSES = {
    "400": ("LocatedProblems", "Invalid input: each problem under its field, nothing stored."),
    "401": ("Problem", "Credentials missing (on a write) or not valid (`Authorization: Token …`)."),
    "403": ("Problem", "Signed in but not allowed (staff only, or a session without its CSRF token)."),
    "404": ("Problem", "No such object, or not one the caller may see (a private one reads the same)."),
    "429": ("RateLimited", "Too many requests: wait the `Retry-After` seconds."),
    "503": ("RateLimited", "The rate limiter cannot be reached: try again after `Retry-After` seconds."),
}


def error_components() -> dict[str, dict]:
    problem = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
    limited = {
        "type": "object",
        "properties": {
            "detail": {"type": "string"},
            "retry_after": {"type": "integer", "description": "seconds to wait (also the Retry-After header)"},
            "retry_at": {"type": "string", "format": "date-time", "description": "a quota: when it is renewed"},
        },
        "required": ["detail"],
    }
    return {"Problem": problem, "RateLimited": limited, "LocatedProblems": LOCATED_PROBLEMS}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular's post-processing hook: every operation may answer 401 (a token that is not
    valid), 429 and 503 (every request is rate-limited, `Retry-After` set); one with a path
    parameter 404; one with a body or query parameters 400; a write 403. An operation's own
    declaration of a status wins."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in error_components().items():
        schemas.setdefault(name, schema)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for code in _error_codes(path, method, operation):
                responses.setdefault(code, _error_answer(code))
    return result


def _error_codes(path: str, method: str, operation: dict) -> list[str]:
    if path.endswith("/schema/"):
        return ["404", "429", "503"]  # (404: an unknown ?format=)
    codes = ["401", "429", "503"]
    if "{" in path:
        codes.append("404")
    if operation.get("requestBody") or any(p.get("in") == "query" for p in operation.get("parameters", [])):
        codes.append("400")
    if method != "get":
        codes.append("403")
    return codes


def _error_answer(code: str) -> dict:
    component, description = ERROR_RESPONSES[code]
    answer: dict = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
    }
    if code in ("429", "503"):
        answer["headers"] = RETRY_AFTER
    return answer


# --- parameters -------------------------------------------------------------------------------


def query(name: str, description: str, *, enum: tuple[str, ...] | list[str] | None = None, kind=str):
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, required=False, enum=enum, description=description)


CAPTIONER_BOARD_PARAMETERS = [
    query("sort", "a metric's slug (or `people`) to rank by; default the dataset's headline metric"),
    query("order", "`desc` or `asc`: against the column's direction lists the worst first", enum=("asc", "desc")),
    query("q", "only systems whose name holds this text"),
    query("only", "only baselines, or systems with a paper or code link", enum=FILTERS),
    query("domain", "one of the dataset's image subsets (nocaps: in-domain, near-domain, out-domain)"),
    query("format", "`json` (the default) or `csv`", enum=("json", "csv")),
]
METRIC_BOARD_PARAMETERS = [
    query(
        "protocol",
        "the paper's protocol, CapBench's canonical one, or the live campaigns' (a column per campaign; another: 404)",
        enum=PROTOCOLS,
    ),
    query("level", "caption-level or system-level agreement", enum=LEVELS),
    query("family", "only metrics of this family (an unknown one: 404)"),
    query("reference", "only reference-free or reference-based metrics", enum=REFERENCES),
    query(
        "sort",
        "rank the metrics by a column (its `key`: `<dataset>:<dimension>:<statistic>`, and `:<campaign>` on a "
        "live column), by a dataset's first column (its slug) or by name (`metric`); default: the first "
        "dataset's headline statistic (another value: 400)",
    ),
    query("order", "`desc` (the default for a column: best agreement first) or `asc`", enum=ORDERS),
]
SCORE_PARAMETERS = [
    query("dataset", "a dataset's slug"),
    query("system", "a system's slug"),
    query("metric", "a metric's slug"),
    query(
        "layout",
        "`long` (the default): one row per caption and metric version; `wide`: one row per caption, "
        "`scores` keyed by metric slug (`value`, `points`, `error`; the newest version's), cursor pages of captions",
        enum=("long", "wide"),
    ),
]
CORRELATION_PARAMETERS = [
    query("dataset", "a dataset's slug"),
    query("metric", "a metric's slug"),
    query("protocol", "`paper`, `canonical` or `live` (a live campaign's)", enum=PROTOCOLS),
    query("level", "`caption` or `system`", enum=LEVELS),
]

# --- answers ----------------------------------------------------------------------------------


class Token(_Schema):
    token = serializers.CharField(help_text="send as `Authorization: Token <token>`")


class Credentials(_Schema):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class DuplicateSubmission(_Schema):
    detail = serializers.CharField()
    submission = serializers.IntegerField(help_text="the earlier submission of the same file")
    url = serializers.URLField(help_text="its API URL")
    page = serializers.URLField(help_text="its page")


class Visibility(_Schema):
    public = serializers.BooleanField(help_text="publish (true) or make private again (false)")


class DatasetUpload(_Schema):
    file = serializers.FileField(help_text="a canonical JSONL file (docs/canonical-format.md)")
    slug = serializers.SlugField(required=False, help_text="the dataset's slug (default: the file's)")
    title = serializers.CharField(required=False, help_text="its title (default: the file's)")


class DatasetImported(DatasetSerializer):
    changed = serializers.BooleanField(help_text="false: the file equals what is stored (200, nothing written)")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="rows stored, per kind")

    class Meta(DatasetSerializer.Meta):
        fields = [*DatasetSerializer.Meta.fields, "changed", "counts"]


class ItemPage(_Schema):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ItemSerializer(many=True)


class Number(_Schema):
    """A number as the API gives it everywhere (docs/api.md "Numbers"): native and in points."""

    value = serializers.FloatField(allow_null=True, help_text="on the metric's own scale (0–1 metrics as 0–1)")
    low = serializers.FloatField(allow_null=True, help_text="the 95% interval's lower end, on the same scale")
    high = serializers.FloatField(allow_null=True)
    points = serializers.FloatField(allow_null=True, help_text="the value as pages show it (× the metric's points)")
    low_points = serializers.FloatField(allow_null=True)
    high_points = serializers.FloatField(allow_null=True)


class BoardCell(Number):
    state = serializers.CharField(help_text="`value`, or why there is no number (`missing`, `failed`, …)")
    rank = serializers.IntegerField(
        required=False, help_text="its rank by this column, where the board is sorted by it"
    )
    note = serializers.CharField(required=False, help_text="the job's error (staff only)")


class BoardMetric(_Schema):
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


class IntegrityFlag(_Schema):
    flag = serializers.ChoiceField(
        choices=["copies_references", "near_empty", "constant"],
        help_text='what the integrity checks at upload found (docs/datasets.md §6, "Integrity checks")',
    )
    share = serializers.FloatField(help_text="the share of its captions concerned (0–1)")
    threshold = serializers.FloatField(help_text="the share from which it is flagged (`constant`: above which)")
    exact = serializers.FloatField(required=False, help_text="`copies_references` only: the share copied word for word")
    words = serializers.CharField(help_text="what was found, in a sentence")


class BoardSystem(_Schema):
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


class PeopleCampaign(_Schema):
    slug = serializers.CharField(help_text="its page: /campaigns/<slug>/")
    title = serializers.CharField()
    mode = serializers.ChoiceField(choices=Campaign.Mode.choices)


class PeopleSource(_Schema):
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


class CaptionScore(_Schema):
    value = serializers.FloatField(allow_null=True, help_text="the metric's own scale; null: no number")
    points = serializers.FloatField(allow_null=True, help_text="as the pages show it")
    error = serializers.CharField(allow_blank=True)


class CaptionScores(_Schema):
    """A caption's row of the per-caption scores' `layout=wide`."""

    caption_id = serializers.IntegerField()
    item = serializers.CharField()
    system = serializers.CharField()
    caption = serializers.CharField()
    scores = serializers.DictField(child=CaptionScore(), help_text="per metric slug")


class CaptionerBoard(_Schema):
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


class ComparedMetric(_Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    aggregation = serializers.CharField(help_text="how each number and the difference are formed")
    a = Number(allow_null=True, help_text="system A's number as the board shows it")
    b = Number(allow_null=True)
    difference = Difference(allow_null=True, help_text="a − b on the shared images (null: not compared)")
    reason = serializers.CharField(allow_blank=True, help_text="why there is no difference, in words")


class Comparison(_Schema):
    dataset = serializers.CharField()
    a = serializers.CharField(help_text="system A's slug")
    b = serializers.CharField()
    images = serializers.IntegerField(help_text="images both systems captioned")
    metrics = ComparedMetric(many=True)


class CampaignName(_Schema):
    slug = serializers.CharField(help_text="its page: /campaigns/<slug>/")
    title = serializers.CharField()


class MetricBoardColumn(_Schema):
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


class SubmittedBy(_Schema):
    owner = serializers.CharField()
    paper_url = serializers.CharField(allow_blank=True)
    code_url = serializers.CharField(allow_blank=True)
    private = serializers.BooleanField(help_text="only the caller sees it")
    trained_on = serializers.ListField(child=serializers.CharField())


class MetricBoardRow(_Schema):
    metric = serializers.CharField()
    family = serializers.CharField()
    submitted = SubmittedBy(allow_null=True)
    cells = serializers.ListField(child=MetricBoardCell(allow_null=True), help_text="one per column")


class MetricBoard(_Schema):
    protocol = serializers.CharField()
    level = serializers.ChoiceField(choices=list(LEVELS))
    sort = serializers.CharField(allow_null=True, help_text="the key of the column ranking the metrics, or `metric`")
    order = serializers.ChoiceField(choices=list(ORDERS), help_text="which way the sorted values run")
    columns = MetricBoardColumn(many=True)
    metrics = MetricBoardRow(many=True)


class MetricProgress(_Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    failed = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True, help_text="what went wrong, in plain words")
    batches_ahead = serializers.IntegerField(help_text="batches queued before this metric's first")
    seconds = serializers.FloatField()


class NotComputedHere(_Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    words = serializers.CharField(help_text="why, in plain words")


class Progress(_Schema):
    submission = serializers.IntegerField()
    status = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    captions = serializers.IntegerField()
    done = serializers.IntegerField(help_text="scores computed, summed over `metrics`")
    total = serializers.IntegerField(help_text="scores to compute, summed over `metrics`")
    metrics = MetricProgress(many=True, help_text="the metrics this server computes")
    unavailable = NotComputedHere(
        many=True, help_text="the metrics this server does not compute: never queued, in no total"
    )
    not_computed_here = serializers.CharField(allow_blank=True, help_text="those in the one line the pages print")
    final = serializers.BooleanField(help_text="no metric is queued or running any more")


class Gap(Number):
    system = serializers.CharField()
    name = serializers.CharField()
    gap = serializers.FloatField(help_text="ours − theirs on the metric's scale (> 0 is better when higher is better)")
    gap_points = serializers.FloatField(help_text="the same in points")


class ResultLine(Number):
    metric = serializers.CharField()
    name = serializers.CharField()
    aggregation = serializers.CharField(help_text="`mean` or `corpus`: how the number is formed")
    higher_is_better = serializers.BooleanField()
    rank = serializers.IntegerField(help_text="among the public systems with a number and this one (1 = best)")
    ranked = serializers.IntegerField(help_text="how many systems the rank is among")
    tied = serializers.BooleanField()
    best = Gap(allow_null=True, help_text="the best other public system")
    baselines = Gap(many=True)


class PendingLine(_Schema):
    metric = serializers.CharField()
    name = serializers.CharField()
    status = serializers.CharField()
    words = serializers.CharField(help_text="what it means, in plain words")
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class Results(_Schema):
    submission = serializers.IntegerField()
    status = serializers.CharField()
    final = serializers.BooleanField()
    dataset = serializers.CharField()
    system = serializers.CharField()
    public_systems = serializers.IntegerField(help_text="public systems on the board besides this one")
    results = ResultLine(many=True)
    pending = PendingLine(many=True, help_text="queued or running")
    missing = PendingLine(many=True, help_text="failed or not available on this server")
    flags = IntegrityFlag(many=True, help_text="what the integrity checks found; a warning, not a refusal")


class AgreementInterval(_Schema):
    value = serializers.FloatField(help_text="Krippendorff's α (interval level, captions as units)")
    low = serializers.FloatField(allow_null=True, help_text="its 95% interval (captions resampled)")
    high = serializers.FloatField(allow_null=True)
    replicates = serializers.IntegerField()
    ratings = serializers.IntegerField()
    captions = serializers.IntegerField()


class PeopleNumber(Number):
    value = serializers.FloatField(help_text="the mean rating (rating), or the Bradley–Terry strength 0–100 (arena)")
    n = serializers.IntegerField(help_text="ratings (rating) or comparisons (arena)")
    theta = serializers.FloatField(required=False, help_text="arena: the log-strength")
    rank = serializers.IntegerField(required=False, help_text="arena: 1 = strongest")
    wins = serializers.IntegerField(required=False)
    losses = serializers.IntegerField(required=False)
    ties = serializers.IntegerField(required=False)


class AnnotatorQuality(_Schema):
    answers = serializers.IntegerField()
    skips = serializers.IntegerField()
    gold = serializers.IntegerField(help_text="known-answer checks answered")
    gold_passed = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    flagged = serializers.BooleanField(help_text="gold accuracy below the campaign's bar")
    excluded = serializers.BooleanField(help_text="their answers are left out of the results")


class BradleyTerrySettings(_Schema):
    alpha = serializers.FloatField(help_text="the ridge penalty")
    comparisons = serializers.IntegerField()
    items = serializers.IntegerField(help_text="images (the units the bootstrap resamples)")
    replicates = serializers.IntegerField()
    seed = serializers.IntegerField()


class CampaignResults(_Schema):
    people_dimension = serializers.CharField(help_text="`mean` (of the rubric's dimensions) or `arena`")
    people = serializers.DictField(child=PeopleNumber(), help_text="per system id the caller may see")
    agreement = serializers.DictField(
        child=AgreementInterval(allow_null=True),
        allow_null=True,
        help_text="per dimension (and `mean`); null in an arena, or on a hidden test set (staff only)",
    )
    bradley_terry = BradleyTerrySettings(allow_null=True, help_text="an arena's fit; null in a rating campaign")
    annotators = serializers.DictField(
        child=AnnotatorQuality(), allow_null=True, help_text="per pseudonym; null on a hidden test set (staff only)"
    )
    answers = serializers.IntegerField()
    gold_answers = serializers.IntegerField()
    flagged = serializers.IntegerField(help_text="annotators flagged")
    median_seconds = serializers.FloatField(allow_null=True, help_text="per answer")
    median_annotator_seconds = serializers.FloatField(allow_null=True, help_text="the median of each one's median")
    metrics = serializers.ListField(child=serializers.CharField(), help_text="metrics with live correlations")
    computed_at = serializers.DateTimeField()


class AnnotatorResemblance(_Schema):
    accounts = serializers.ListField(child=serializers.CharField(), help_text="the two accounts' usernames")
    annotators = serializers.ListField(child=serializers.CharField(), help_text="their pseudonyms in the campaign")
    common = serializers.IntegerField(help_text="tasks both answered (gold checks left out)")
    agreed = serializers.IntegerField(help_text="of those, answered the same")
    rate = serializers.FloatField()
    expected = serializers.FloatField(help_text="how often two of the campaign's other annotators answer the same")
    p_value = serializers.FloatField(help_text="the binomial chance of agreeing that often at `expected`")
    together = serializers.IntegerField(help_text="common tasks both answered within 10 seconds")
    suspicious = serializers.BooleanField(help_text="p_value under 0.001 shared among all the pairs")


class CampaignDetail(CampaignSerializer):
    results = CampaignResults(allow_null=True, help_text="null until its results are first computed")
    resemblance = AnnotatorResemblance(
        many=True,
        allow_null=True,
        help_text="staff only (null for everyone else): pairs of annotators who answer alike, most alike first",
    )

    class Meta(CampaignSerializer.Meta):
        fields = [*CampaignSerializer.Meta.fields, "results", "resemblance"]
