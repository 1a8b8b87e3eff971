"""The staff form that creates a campaign (on one dataset, chosen first) and the annotator's answer."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.utils.text import slugify

from campaigns.models import Campaign
from campaigns.rubrics import NAMES
from catalog.models import System


class CampaignForm(forms.Form):
    title = forms.CharField(max_length=200)
    slug = forms.SlugField(
        max_length=60, required=False, help_text="its address: /campaigns/SLUG/ (left empty: made from the title)"
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=4000)
    mode = forms.ChoiceField(choices=Campaign.Mode.choices, initial=Campaign.Mode.RATING, widget=forms.RadioSelect)
    rubric_name = forms.ChoiceField(
        label="Rubric (rating mode)",
        choices=[*NAMES.items(), ("custom", "custom (one dimension per line below)")],
        initial="accr",
    )
    custom_rubric = forms.CharField(
        label="Custom dimensions",
        required=False,
        max_length=4000,
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "fluency: Is the caption grammatical, natural English?"}
        ),
        help_text=(
            "one per line, `name: definition`; rated 1-5. Gold checks read the first dimension (a caption of "
            "another image must rate 1 or 2 there): start with one such as accuracy or relevance."
        ),
    )
    systems = forms.ModelMultipleChoiceField(
        queryset=System.objects.none(), widget=forms.CheckboxSelectMultiple, help_text="public systems only"
    )
    ratings_wanted = forms.IntegerField(
        min_value=1, max_value=20, initial=3, help_text="ratings per caption (arena: comparisons per image)"
    )
    audience = forms.ChoiceField(choices=Campaign.Audience.choices, initial=Campaign.Audience.SIGNED_IN)
    annotators = forms.CharField(
        required=False, max_length=4000, help_text="invited annotators' user names, separated by commas"
    )
    gold_rate = forms.FloatField(min_value=0, max_value=0.5, initial=0.1, help_text="share of known-answer checks")
    gold_pass = forms.FloatField(
        min_value=0, max_value=1, initial=0.7, help_text="gold accuracy below which an annotator is flagged"
    )
    gold_minimum = forms.IntegerField(min_value=1, max_value=100, initial=3, help_text="gold answers before flagging")
    exclude_flagged = forms.BooleanField(required=False, initial=True, label="Leave flagged annotators' answers out")

    def __init__(self, *args, systems, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["systems"]
        assert isinstance(field, forms.ModelMultipleChoiceField)  # (declared above)
        field.queryset = systems

    def clean_slug(self) -> str:
        """The slug given, else one made from the title (as static/js/campaign-slug.js shows it)."""
        slug = self.cleaned_data["slug"] or slugify(self.data.get("title", ""))[:60].strip("-")
        if not slug:
            raise forms.ValidationError("give the campaign an address: letters, digits, hyphens")
        return slug

    def clean_annotators(self) -> list:
        names = [name.strip() for name in self.cleaned_data["annotators"].split(",") if name.strip()]
        users = list(get_user_model().objects.filter(username__in=names))
        missing = sorted(set(names) - {user.username for user in users})
        if missing:
            raise forms.ValidationError(f"no user named {', '.join(missing)}")
        return users
