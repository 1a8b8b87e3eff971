"""Builders for the platform's tests: factory-boy factories for the common rows (accounts, datasets,
their items, systems and captions), and `submit`, a submission through the real service.

    UserFactory(username="ada")                  # signs in with PASSWORD
    DatasetFactory(slug="tiny", dimensions=["overall"])
    CaptionFactory(item=item, system=system, text="a dog")
    SubmissionFactory(system=system, is_public=False)
    submit(owner, dataset, "Careful", metrics=["rouge_l"], plan=True)
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import factory
from django.conf import settings

from catalog.models import Caption, Dataset, Item, System
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create, submission_plan

PASSWORD = "a long test password"  # every account the factories make signs in with it


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = settings.AUTH_USER_MODEL
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password(PASSWORD)


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    slug = factory.Sequence(lambda n: f"dataset-{n}")
    title = factory.LazyAttribute(lambda dataset: dataset.slug.replace("-", " ").title())
    source_format = "canonical"


class ItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Item

    dataset = factory.SubFactory(DatasetFactory)
    external_id = factory.Sequence(lambda n: f"item-{n}")


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System

    dataset = factory.SubFactory(DatasetFactory)
    slug = factory.Sequence(lambda n: f"system-{n}")
    name = factory.LazyAttribute(lambda system: system.slug.replace("-", " ").title())


class CaptionFactory(factory.django.DjangoModelFactory):
    """A caption of `item` by `system` (one made on the item's dataset when not given)."""

    class Meta:
        model = Caption

    item = factory.SubFactory(ItemFactory)
    system = factory.SubFactory(SystemFactory, dataset=factory.SelfAttribute("..item.dataset"))
    text = factory.Sequence(lambda n: f"caption number {n}")


class SubmissionFactory(factory.django.DjangoModelFactory):
    """A submission's row alone, done (no stored file, no captions): for what reads only its status,
    visibility and system. `submit` below makes a real one."""

    class Meta:
        model = Submission

    owner = factory.SubFactory(UserFactory)
    system = factory.SubFactory(SystemFactory, kind=System.Kind.SUBMISSION)
    dataset = factory.SelfAttribute("system.dataset")
    method_name = factory.SelfAttribute("system.name")
    file_name = "results.json"
    file_format = "json"
    file_sha256 = "0" * 64
    file_size = 1
    stored_file = "results.json"
    caption_count = 1
    status = Submission.Status.DONE
    is_public = True


Captions = Callable[[Item], str] | str


def words(count: int) -> str:
    """A caption of `count` words ("word word …"): what the test_words metric counts."""
    return " ".join(["word"] * count)


def results_file(dataset: Dataset, caption: Captions, *, shuffled: bool = False) -> bytes:
    """A JSON results file with one caption per image of `dataset`: `caption(item)`, or the same text
    for each; in id order, or in random order when `shuffled`."""
    items = list(Item.objects.filter(dataset=dataset).order_by("id"))
    if shuffled:
        random.shuffle(items)
    text = caption if callable(caption) else (lambda item: caption)
    return json.dumps([{"image_id": item.external_id, "caption": text(item)} for item in items]).encode()


def submit(
    owner,
    dataset: Dataset,
    name: str = "Captioner",
    *,
    caption: Captions | None = None,
    metrics: list[str] | None = None,
    public: bool = True,
    plan: bool = False,
    shuffled: bool = False,
    file_name: str = "results.json",
    **method: str,
) -> Submission:
    """A submission through the real service (submissions.services.submission_create) of `name`'s
    captions for every image (by default "<name> says item <id> shows something"), for `metrics`,
    public unless told; planned (its jobs made, not run) when `plan`. `method`: MethodInfo's other
    fields (description, paper_url, code_url)."""

    def says(item: Item) -> str:
        return f"{name} says item {item.external_id} shows something"

    submission = submission_create(
        owner=owner,
        dataset=dataset,
        file_name=file_name,
        content=results_file(dataset, says if caption is None else caption, shuffled=shuffled),
        method=MethodInfo(name, **method),
        metrics=metrics,
        is_public=public,
    )
    if plan:
        submission_plan(submission_id=submission.pk)
    return submission
