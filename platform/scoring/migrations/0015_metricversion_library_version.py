# MetricVersion.library_version: the capbench-eval release that computed a version's scores, read by
# its signature (scoring.signatures). Every version stored before this migration was computed by the
# only release there has been, 0.1.0 (written out, not imported: a migration keeps the value of its
# day); a researcher's uploaded scores (their metric of family "submitted", workbench.models.FAMILY)
# were computed by no library and keep it empty. The column has a database default so that
# processes of the previous release, still running during a rolling deploy, can insert rows.

from django.db import migrations, models

LIBRARY_VERSION = "0.1.0"  # capbench_eval.version.VERSION when this migration was written
UPLOADED_FAMILY = "submitted"


def versions_marked(apps, schema_editor):
    versions = apps.get_model("scoring", "MetricVersion").objects
    versions.exclude(metric__family=UPLOADED_FAMILY).update(library_version=LIBRARY_VERSION)


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0014_system_numbers"),
    ]

    operations = [
        migrations.AddField(
            model_name="metricversion",
            name="library_version",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="the capbench-eval release that computed its scores (capbench_eval.version.VERSION); "
                "empty for uploaded scores, which no library computed",
                max_length=40,
            ),
        ),
        migrations.RunPython(versions_marked, migrations.RunPython.noop),
    ]
