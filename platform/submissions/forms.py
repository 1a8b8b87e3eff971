"""The upload form: a results file and the method's metadata."""

from django import forms
from django.conf import settings

from catalog.models import Dataset
from submissions.formats import FORMATS
from submissions.services import NAME_MAX_CHARS, URL_MAX_CHARS

# What the file picker offers: the suffixes formats.detect_format reads by name (.ndjson is JSON Lines).
ACCEPT = ",".join(f".{suffix}" for suffix in (*FORMATS, "ndjson"))


class DatasetChoice(forms.ModelChoiceField):
    """Datasets by title (their slug is the submitted value); no "---------": the first is chosen
    unless the page was opened for another (?dataset=)."""

    def label_from_instance(self, obj: Dataset) -> str:
        return obj.title


class SubmissionForm(forms.Form):
    dataset = DatasetChoice(
        queryset=Dataset.objects.visible_to(None).order_by("title", "slug"),
        to_field_name="slug",
        empty_label=None,
        help_text="the dataset whose images you captioned",
    )
    results = forms.FileField(
        label="Results file",
        widget=forms.ClearableFileInput(attrs={"accept": ACCEPT}),
        help_text='COCO captioning results JSON ([{"image_id": ..., "caption": "..."}]), '
        "JSON Lines or CSV with image_id and caption",
    )
    method_name = forms.CharField(max_length=NAME_MAX_CHARS)
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=settings.CAPBENCH_DESCRIPTION_MAX_CHARS
    )
    paper_url = forms.URLField(label="Paper URL", required=False, assume_scheme="https", max_length=URL_MAX_CHARS)
    code_url = forms.URLField(label="Code URL", required=False, assume_scheme="https", max_length=URL_MAX_CHARS)
    # Private unless asked, as through the API and `manage.py submit`: unpublished work stays unpublished.
    is_public = forms.BooleanField(
        required=False,
        initial=False,
        label="Show on the public leaderboard",
        help_text=(
            "Off: only you see it until you publish it from “My submissions”. A public result may be frozen "
            "in a citable snapshot of the board, which keeps it even if you hide it later."
        ),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["dataset"]
        assert isinstance(field, DatasetChoice) and field.queryset is not None  # (declared above)
        slugs = list(field.queryset.values_list("slug", flat=True))
        if self.initial.get("dataset") not in slugs:  # none asked, or one this viewer cannot choose
            self.initial["dataset"] = slugs[0] if slugs else None

    def clean_results(self):
        upload = self.cleaned_data["results"]
        if upload.size > settings.CAPBENCH_SUBMISSION_MAX_BYTES:
            raise forms.ValidationError(
                f"{upload.name}: {upload.size:,} bytes, more than the limit of "
                f"{settings.CAPBENCH_SUBMISSION_MAX_BYTES:,}"
            )
        return upload
