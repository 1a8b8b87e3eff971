"""Django admin: citable snapshots, read only (staff freeze them from the boards' pages; they are
never changed)."""

from django.contrib import admin

from leaderboards.models import CitableSnapshot


@admin.register(CitableSnapshot)
class CitableSnapshotAdmin(admin.ModelAdmin):
    list_display = ["board", "dataset", "number", "created_at", "created_by", "note"]
    list_filter = ["board", "dataset"]
    search_fields = ["note", "created_by"]
    readonly_fields = [
        "board",
        "dataset",
        "number",
        "created_at",
        "created_by",
        "note",
        "payload",
        "provenance",
        "digest",
    ]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
