"""Score rows made compact (docs/performance.md, "Ten million scores"): the reuse key as the first 16
bytes of its SHA-256 instead of 64 hex characters (with one index instead of two: the text index
came with a second `varchar_pattern_ops` copy), the statistics as compact JSON text instead of
jsonb, no index of caption's own (the unique pair starts with it), and an index for the few rows
that name a generated picture (the picture view looked them up by scanning every score).

Keys already stored keep working: the new key is the first half of the old one, decoded. A key that
is not a metric's (an uploaded score's empty one) becomes NULL: no index entry, nothing to reuse.
Going back restores the columns' types, not the keys' second halves: scores stored before are then
not reused (they are computed again)."""

import django.contrib.postgres.indexes
import django.db.models.deletion
import django.db.models.fields.json
from django.db import migrations, models

import scoring.models

TO_BYTES = """
DROP INDEX IF EXISTS scoring_score_input_key_bf8ed89d_like;
DROP INDEX IF EXISTS scoring_score_input_key_bf8ed89d;
ALTER TABLE scoring_score
    ALTER COLUMN input_key TYPE bytea USING (
        CASE WHEN input_key ~ '^[0-9a-f]{64}$' THEN decode(substr(input_key, 1, 32), 'hex') END
    ),
    ALTER COLUMN input_key DROP NOT NULL,
    ALTER COLUMN statistics TYPE text USING statistics::text;
"""
TO_TEXT = """
ALTER TABLE scoring_score
    ALTER COLUMN input_key TYPE varchar(64) USING coalesce(encode(input_key, 'hex'), ''),
    ALTER COLUMN input_key SET NOT NULL,
    ALTER COLUMN statistics TYPE jsonb USING statistics::jsonb;
CREATE INDEX scoring_score_input_key_bf8ed89d ON scoring_score (input_key);
CREATE INDEX scoring_score_input_key_bf8ed89d_like ON scoring_score (input_key varchar_pattern_ops);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0005_judgment_source"),
        ("scoring", "0011_significance_subject"),
    ]

    operations = [
        migrations.AlterField(
            model_name="score",
            name="caption",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="scores",
                to="catalog.caption",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(TO_BYTES, TO_TEXT)],
            state_operations=[
                migrations.AlterField(
                    model_name="score",
                    name="input_key",
                    field=models.BinaryField(
                        blank=True,
                        help_text="first 16 bytes of the SHA-256 of (metric config, candidate, references, media, "
                        "corpus context)",
                        max_length=16,
                        null=True,
                    ),
                ),
                migrations.AlterField(
                    model_name="score",
                    name="statistics",
                    field=scoring.models.CompactJSONField(blank=True, null=True),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="score",
            index=django.contrib.postgres.indexes.HashIndex(fields=["input_key"], name="score_reuse"),
        ),
        migrations.AddIndex(
            model_name="score",
            index=models.Index(
                django.db.models.fields.json.KeyTextTransform("generated_image", "detail"),
                condition=models.Q(("detail__has_key", "generated_image")),
                name="score_generated_image",
            ),
        ),
    ]
