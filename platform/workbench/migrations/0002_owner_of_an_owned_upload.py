"""The owner comes from the abstract OwnedUpload (catalog/uploads/models.py): its reverse name is
written as a pattern (`user.metricsubmissions`, no longer `user.metric_submissions`). No SQL."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workbench", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="metricsubmission",
            name="owner",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="%(class)ss", to=settings.AUTH_USER_MODEL
            ),
        ),
    ]
