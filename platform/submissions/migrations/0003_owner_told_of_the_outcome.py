"""The outcome a submission's owner was last told of by e-mail (submissions.notifications).

Submissions that had ended before there was any such mail count as told of their outcome (with no
time): a later re-scoring that ends as before announces nothing about an old result."""

from django.db import migrations, models

FINAL = ("done", "failed")


def outcomes_before_mail_count_as_told(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(status__in=FINAL).update(notified_status=models.F("status"))


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0002_stored_file_in_the_file_store"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="notified_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="submission",
            name="notified_status",
            field=models.CharField(
                blank=True,
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("done", "finished"),
                    ("failed", "Failed"),
                    ("withdrawn", "Withdrawn"),
                ],
                default="",
                db_default="",
                max_length=10,
            ),
        ),
        migrations.RunPython(outcomes_before_mail_count_as_told, migrations.RunPython.noop, elidable=True),
    ]
