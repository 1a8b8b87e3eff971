"""Django admin for every catalog model."""

from django.contrib import admin

from catalog.models import Caption, Dataset, ImportRecord, Item, Judgment, Media, PairJudgment, System


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = [
        "slug",
        "title",
        "modality",
        "kind",
        "headline_metric",
        "source_format",
        "protocol_version",
        "is_public",
        "references_hidden",
    ]
    list_filter = ["modality", "kind", "is_public", "references_hidden"]
    search_fields = ["slug", "title"]
    readonly_fields = ["content_sha256", "created_at", "updated_at"]


@admin.register(Media)
class MediaAdmin(admin.ModelAdmin):
    list_display = ["name", "dataset", "kind", "expected_md5", "sha256", "attached_at"]
    list_filter = ["dataset", "kind"]
    search_fields = ["name", "sha256", "expected_md5"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "media"]
    list_filter = ["dataset"]
    search_fields = ["external_id"]
    raw_id_fields = ["media"]


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "dataset", "kind", "is_baseline"]
    list_filter = ["dataset", "kind", "is_baseline"]
    search_fields = ["name", "slug"]


@admin.register(Caption)
class CaptionAdmin(admin.ModelAdmin):
    list_display = ["text", "item", "system", "external_id"]
    list_filter = ["system__dataset"]
    search_fields = ["text", "external_id"]
    raw_id_fields = ["item", "system"]


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ["caption", "dimension", "annotator", "value"]
    list_filter = ["dimension"]
    raw_id_fields = ["caption"]


@admin.register(PairJudgment)
class PairJudgmentAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "category", "winner", "votes_a", "votes_b"]
    list_filter = ["dataset", "category", "winner"]
    raw_id_fields = ["item", "caption_a", "caption_b"]


@admin.register(ImportRecord)
class ImportRecordAdmin(admin.ModelAdmin):
    list_display = ["dataset", "source_format", "changed", "seconds", "created_at"]
    list_filter = ["dataset", "changed"]
    readonly_fields = [f.name for f in ImportRecord._meta.fields]
