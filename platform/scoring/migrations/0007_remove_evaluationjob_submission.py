# EvaluationJob.submission repeated EvaluationJob.system.submission (Submission.system is one to one):
# the column goes, the link stays derivable through the system. Schema only going forward; going
# back fills the column again from the system's submission.

from django.db import migrations
from django.db.models import OuterRef, Subquery


def fill_submission_from_system(apps, schema_editor):
    EvaluationJob = apps.get_model("scoring", "EvaluationJob")
    Submission = apps.get_model("submissions", "Submission")
    EvaluationJob.objects.filter(system__isnull=False).update(
        submission_id=Subquery(Submission.objects.filter(system_id=OuterRef("system_id")).values("pk")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0006_protocol_name_version"),
        ("submissions", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, fill_submission_from_system),
        migrations.RemoveField(model_name="evaluationjob", name="submission"),
    ]
