from django.contrib import admin

from scoring.models import CorrelationResult, EvaluationJob, JobBatch, Metric, MetricVersion, Score, SystemScore


@admin.register(Metric)
class MetricAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "family", "queue", "current_version", "available", "is_registered")


@admin.register(MetricVersion)
class MetricVersionAdmin(admin.ModelAdmin):
    list_display = ("metric", "version", "config_hash", "created_at")


class JobBatchInline(admin.TabularInline):
    model = JobBatch
    fields = ("index", "status", "attempts", "worker", "seconds", "failed", "reused", "error")
    readonly_fields = fields
    extra = 0


@admin.register(EvaluationJob)
class EvaluationJobAdmin(admin.ModelAdmin):
    list_display = ("id", "metric_version", "dataset", "system", "status", "done", "total", "failed", "queued_at")
    list_filter = ("status", "purpose", "dataset")
    inlines = [JobBatchInline]


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    list_display = ("caption", "metric_version", "value", "error")
    raw_id_fields = ("caption",)


admin.site.register(SystemScore)
admin.site.register(CorrelationResult)
