from django.contrib import admin

from workbench.models import MetricSubmission, MetricUpload, UploadedFile


class UploadInline(admin.TabularInline):
    model = MetricUpload
    extra = 0
    fields = ("metric_version", "status", "error", "created_at", "finished_at")
    readonly_fields = fields


@admin.register(MetricSubmission)
class MetricSubmissionAdmin(admin.ModelAdmin):
    list_display = ("metric", "owner", "is_public", "status", "created_at")
    list_filter = ("is_public", "status")
    search_fields = ("metric__name", "metric__slug", "owner__username")
    inlines = [UploadInline]


@admin.register(UploadedFile)
class UploadedFileAdmin(admin.ModelAdmin):
    list_display = ("upload", "dataset", "file_name", "scored", "candidates")
    readonly_fields = ("stored_file", "file_sha256")
