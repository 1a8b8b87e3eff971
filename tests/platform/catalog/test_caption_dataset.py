"""Caption.dataset is written by the database (trigger caption_dataset, migration catalog 0006)
whatever inserts the row: the ORM, bulk_create, a raw COPY; and follows a change of item."""

import pytest
from django.db import connection

from catalog.models import Caption
from tests.platform.factories import DatasetFactory, ItemFactory, SystemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_datasets():
    first, second = DatasetFactory.create_batch(2)
    items = [ItemFactory(dataset=dataset) for dataset in (first, second)]
    systems = [SystemFactory(dataset=dataset) for dataset in (first, second)]
    return (first, second), items, systems


def test_every_way_of_inserting_a_caption_records_its_items_dataset(two_datasets):
    (first, second), items, systems = two_datasets
    created = Caption.objects.create(item=items[0], system=systems[0], text="one way")
    Caption.objects.bulk_create([Caption(item=items[1], system=systems[1], text="another")])
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO catalog_caption (item_id, system_id, external_id, text, dataset_id) VALUES (%s, %s, 'x', 'raw', %s)",
            [items[1].pk, systems[1].pk, first.pk],  # a wrong dataset given: the item's wins
        )
    found = dict(Caption.objects.values_list("text", "dataset_id"))
    assert found == {"one way": first.pk, "another": second.pk, "raw": second.pk}
    created.refresh_from_db()
    assert created.dataset_id == first.pk


def test_a_caption_moved_to_another_item_follows_its_dataset(two_datasets):
    (first, second), items, systems = two_datasets
    caption = Caption.objects.create(item=items[0], system=systems[0], text="moving")
    Caption.objects.filter(pk=caption.pk).update(item=items[1])
    assert Caption.objects.get(pk=caption.pk).dataset_id == second.pk
    Caption.objects.filter(pk=caption.pk).update(dataset=first)  # cannot be set apart from its item
    assert Caption.objects.get(pk=caption.pk).dataset_id == second.pk
