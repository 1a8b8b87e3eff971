"""No index of Score's own on metric_version: every read of a version's scores reaches them through
their captions (score_unique); 6.5 bytes a row (docs/performance.md)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0012_score_compact"),
    ]

    operations = [
        migrations.AlterField(
            model_name="score",
            name="metric_version",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="scores",
                to="scoring.metricversion",
            ),
        ),
    ]
