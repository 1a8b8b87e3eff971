from django.contrib import admin

from submissions.models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "method_name", "dataset", "owner", "status", "caption_count", "is_public", "created_at")
    list_filter = ("status", "dataset", "is_public", "is_baseline")
    search_fields = ("method_name", "owner__username")
    readonly_fields = ("file_sha256", "stored_file", "created_at", "dispatched_at", "started_at", "finished_at")
