"""What the integrity checks found at upload (submissions.integrity), stored on the submission.

Submissions made before the checks existed are checked here once, under the thresholds of the
settings at migration time, so that every board row says the same of its submission."""

from django.conf import settings
from django.db import migrations, models

from submissions.integrity import caption_flags


def check_earlier_submissions(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    Caption = apps.get_model("catalog", "Caption")
    for submission in Submission.objects.only("pk", "system_id").iterator():
        captions = Caption.objects.filter(system_id=submission.system_id).order_by("id")
        flags = caption_flags(
            captions.values_list("text", "item__references").iterator(),
            copy_share=settings.CAPBENCH_FLAG_COPY_SHARE,
            short_share=settings.CAPBENCH_FLAG_SHORT_SHARE,
        )
        if flags:
            Submission.objects.filter(pk=submission.pk).update(flags=flags)


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0001_initial"),
        ("submissions", "0003_owner_told_of_the_outcome"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="flags",
            field=models.JSONField(
                blank=True,
                db_default=models.Value([], models.JSONField()),
                default=list,
                help_text="integrity flags: {flag, share, threshold, …}",
            ),
        ),
        migrations.RunPython(check_earlier_submissions, migrations.RunPython.noop),
    ]
