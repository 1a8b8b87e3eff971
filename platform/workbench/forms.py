"""The metric submission form: the metric's description and one scores file per dataset."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from catalog.models import Dataset
from workbench.services import NAME_MAX, URL_MAX_CHARS

ACCEPT = ".jsonl,.ndjson,.csv,.json"


class MetricForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX, help_text="Uploading again under the same name makes a new version.")
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=settings.CAPBENCH_DESCRIPTION_MAX_CHARS
    )
    paper_url = forms.URLField(required=False, assume_scheme="https", max_length=URL_MAX_CHARS)
    code_url = forms.URLField(required=False, assume_scheme="https", max_length=URL_MAX_CHARS)
    lower_is_better = forms.BooleanField(required=False, label="Lower scores are better")
    reference_free = forms.BooleanField(required=False, label="Reference-free (reads no reference captions)")
    is_public = forms.BooleanField(
        required=False,
        initial=False,
        label="Show on the public metric board",
        help_text="Off: only you see it until you publish it from “My metrics”.",
    )

    def __init__(self, *args, datasets: list[Dataset], **kwargs):
        super().__init__(*args, **kwargs)
        self.datasets = datasets
        for dataset in datasets:
            self.fields[self.file_field(dataset)] = forms.FileField(
                required=False,
                label=f"Scores for {dataset.title}",
                widget=forms.ClearableFileInput(attrs={"accept": ACCEPT}),
            )
        self.fields["trained_on"] = forms.MultipleChoiceField(
            required=False,
            choices=[(d.slug, d.title) for d in datasets],
            widget=forms.CheckboxSelectMultiple,
            label="Datasets whose human judgments the metric may have been trained or tuned on",
            help_text="Their correlations are shown greyed.",
        )

    @staticmethod
    def file_field(dataset: Dataset) -> str:
        return f"scores_{dataset.slug}"

    def file_fields(self):
        return [self[self.file_field(dataset)] for dataset in self.datasets]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        chosen = [d for d in self.datasets if data.get(self.file_field(d))]
        if not chosen:
            raise forms.ValidationError("Choose at least one scores file (one per dataset).")
        for dataset in chosen:
            upload = data[self.file_field(dataset)]
            if upload.size > settings.CAPBENCH_SUBMISSION_MAX_BYTES:
                self.add_error(
                    self.file_field(dataset),
                    f"{upload.name}: {upload.size:,} bytes, more than the limit of "
                    f"{settings.CAPBENCH_SUBMISSION_MAX_BYTES:,}",
                )
        data["chosen"] = chosen
        return data
