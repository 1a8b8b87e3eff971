"""Caption.dataset: the item's dataset on the caption itself, written by a trigger on every insert
(and on a change of item), so that an index can give a dataset's captions in id order; the scores
API reads its pages that way (docs/performance.md). Captions already stored are filled here."""

import django.db.models.deletion
from django.db import migrations, models

TRIGGER = """
CREATE FUNCTION catalog_caption_dataset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT dataset_id INTO NEW.dataset_id FROM catalog_item WHERE id = NEW.item_id;
    RETURN NEW;
END
$$;
CREATE TRIGGER caption_dataset BEFORE INSERT OR UPDATE OF item_id, dataset_id ON catalog_caption
    FOR EACH ROW EXECUTE FUNCTION catalog_caption_dataset();
UPDATE catalog_caption AS caption SET dataset_id = item.dataset_id
    FROM catalog_item AS item WHERE item.id = caption.item_id;
"""
TRIGGER_REMOVED = """
DROP TRIGGER caption_dataset ON catalog_caption;
DROP FUNCTION catalog_caption_dataset();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0005_judgment_source"),
    ]

    operations = [
        migrations.AddField(
            model_name="caption",
            name="dataset",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="catalog.dataset",
            ),
        ),
        migrations.RunSQL(TRIGGER, TRIGGER_REMOVED),
        migrations.AlterField(
            model_name="caption",
            name="system",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="captions",
                to="catalog.system",
            ),
        ),
        migrations.AddIndex(
            model_name="caption",
            index=models.Index(fields=["dataset", "id"], name="caption_dataset_order"),
        ),
        migrations.AddIndex(
            model_name="caption",
            index=models.Index(fields=["system", "id"], name="caption_system_order"),
        ),
    ]
