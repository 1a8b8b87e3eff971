from django.contrib import admin

from campaigns.models import Annotation, Campaign


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "dataset", "mode", "status", "audience", "created_at")
    list_filter = ("mode", "status", "audience")
    search_fields = ("slug", "title")
    filter_horizontal = ("systems", "annotators")
    readonly_fields = ("rubric", "created_by", "created_at")


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ("id", "campaign", "annotator", "status", "decoy", "shown_at", "answered_at")
    list_filter = ("status", "campaign")
    readonly_fields = [field.name for field in Annotation._meta.fields]
