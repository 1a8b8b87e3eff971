from django.contrib import admin

from campaigns.models import Annotation, Campaign


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "dataset", "mode", "status", "audience", "created_at")
    list_filter = ("mode", "status", "audience")
    search_fields = ("slug", "title")
    filter_horizontal = ("annotators",)
    # Created at /campaigns/new/ only (campaigns.services.creation checks the systems are public and
    # freezes the rubric); here staff change what may change later.
    readonly_fields = ("dataset", "slug", "mode", "rubric_name", "rubric", "systems", "created_by", "created_at")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "annotator", "status", "decoy", "shown_at", "answered_at")
    list_filter = ("status", "campaign")
    readonly_fields = [field.name for field in Annotation._meta.fields]
