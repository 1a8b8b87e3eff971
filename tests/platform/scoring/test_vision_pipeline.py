"""The cycle metrics through the engine on tiny models: the T2I cycle score stored with its
generated picture, shown on the item page; CAMScore's fusion trained with `manage.py metrics train`
on one split of the platform's judgments, recorded in its configuration, then scoring through the
engine with every level in the detail."""

import hashlib
import io
import shutil

import boto3
import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from moto import mock_aws
from PIL import Image

from capbench.settings.files import object_storage
from capbench_eval.backbones.t2i import generated_path
from capbench_eval.metrics.vision.levels import harmonic_mean
from catalog.models import Caption, Dataset, Item, Judgment, Media, System
from plumbing import storage
from scoring.models import Metric, Score
from scoring.services.pictures import picture_name
from scoring.services.planning import dataset_plan
from scoring.services.training import item_split
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_page_memory")]


@pytest.fixture
def rated(tmp_path, settings):
    """30 pictures with two rated captions each (Flickr8k-Expert's 1–4 scale)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    dataset = Dataset.objects.create(
        slug="rated",
        title="Rated",
        source_format="canonical",
        dimensions=["overall"],
        rating_scale={"min": 1, "max": 4},
    )
    system = System.objects.create(dataset=dataset, slug="model-a", name="Model A")
    rng = np.random.default_rng(5)
    words = ["a dog runs", "a red bus", "two children play", "a cat sleeps", "a man rides a bike"]
    for index in range(30):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (32, 40, 3), dtype=np.uint8)).save(buffer, format="PNG")
        sha = hashlib.sha256(buffer.getvalue()).hexdigest()
        target = settings.MEDIA_ROOT / sha[:2] / f"{sha}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(buffer.getvalue())
        media = Media.objects.create(
            dataset=dataset, name=f"{index}.png", sha256=sha, stored_path=f"{sha[:2]}/{sha}.png"
        )
        item = Item.objects.create(dataset=dataset, external_id=f"{index}.png", media=media, references=["a picture"])
        for number in range(2):
            caption = Caption.objects.create(
                item=item, system=system, external_id=str(number), text=f"{words[(index + number) % 5]} number {index}"
            )
            Judgment.objects.create(caption=caption, dimension="overall", value=float(rng.integers(1, 5)))
    return dataset


@pytest.mark.slow  # builds the tiny text-to-image pipelines and generates on them: four seconds
def test_the_t2i_cycle_score_is_stored_with_its_picture_and_shown_on_the_item_page(client, vision_store, rated):
    item = Item.objects.filter(dataset=rated).order_by("id").first()
    Caption.objects.exclude(item=item).delete()
    run_jobs(dataset_plan(dataset=rated, slugs=["t2i_cycle"]))
    scores = list(Score.objects.filter(metric_version__metric__slug="t2i_cycle"))
    assert len(scores) == 2
    assert all(-1 <= score.value <= 1 for score in scores)
    page = client.get(f"/datasets/rated/items/{item.pk}/").content.decode()
    for score in scores:
        key = score.detail["generated_image"]
        assert f'src="/generated/{key}.png"' in page
        response = client.get(f"/generated/{key}.png")
        assert response["Content-Type"] == "image/png"
        assert Image.open(io.BytesIO(b"".join(response.streaming_content))).size == (64, 64)
    assert client.get(f"/generated/{'0' * 64}.png").status_code == 404
    assert client.get("/generated/..%2F..%2Fsecret.png").status_code == 404


@pytest.mark.slow
@mock_aws
def test_a_generated_picture_reaches_the_web_through_the_bucket(
    client, vision_store, rated, settings, tmp_path, monkeypatch
):
    """With an object store, the worker publishes the picture it generated before the score is stored,
    and the web view serves it from the bucket: no file on the worker's disk is read."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="files")
    local = settings.MEDIA_ROOT
    settings.STORAGES = {**settings.STORAGES, "default": object_storage("files", None, "us-east-1", "lab")}
    settings.CAPBENCH_FILE_CACHE = tmp_path / "worker-cache"
    for media in Media.objects.filter(dataset=rated):
        storage.put_path(media.stored_path, local / media.stored_path)
    shutil.rmtree(local)  # the dataset's pictures are in the bucket only
    item = Item.objects.filter(dataset=rated).order_by("id").first()
    Caption.objects.exclude(item=item).delete()
    run_jobs(dataset_plan(dataset=rated, slugs=["t2i_cycle"]))
    keys = [score.detail["generated_image"] for score in Score.objects.filter(metric_version__metric__slug="t2i_cycle")]
    assert len(keys) == 2
    for key in keys:
        assert storage.exists(picture_name(key))
        generated_path(key).unlink()  # the worker's own copy gone: the web reads the bucket
        response = client.get(f"/generated/{key}.png")
        assert response.status_code == 200
        assert Image.open(io.BytesIO(b"".join(response.streaming_content))).size == (64, 64)


@pytest.mark.slow
def test_camscore_is_trained_on_one_split_and_then_scores_through_the_engine(vision_store, rated):
    assert not Metric.objects.filter(slug="camscore", available=True).exists()
    out = io.StringIO()
    call_command(
        "metrics",
        "train",
        "camscore",
        "--dataset",
        "rated",
        "--lr",
        "1e-3",
        "--max-epochs",
        "30",
        "--patience",
        "10",
        stdout=out,
    )
    text = out.getvalue()
    splits = [
        item_split("rated", external_id)
        for external_id in Item.objects.filter(dataset=rated).values_list("external_id", flat=True)
    ]
    assert f"train: computing CAMScore's levels for {2 * splits.count('train')} captions" in text
    assert "best validation τ-b" in text
    metric = Metric.objects.select_related("current_version").get(slug="camscore")
    assert metric.available
    record = metric.current_version.config["fusion"]["trained_on"]
    assert (record["dataset"], record["split"], record["validation"]) == ("rated", "train", "validation")
    assert record["train_captions"] == 2 * splits.count("train")
    assert record["split_rule"].startswith("sha256")
    Caption.objects.exclude(item__in=Item.objects.filter(dataset=rated).order_by("id")[:3]).delete()
    run_jobs(dataset_plan(dataset=rated, slugs=["camscore"]))
    from capbench_eval.backbones.catalogue import CATALOGUE
    from capbench_eval.metrics.vision.fusion import LEVELS, Fusion

    stored = list(Score.objects.filter(metric_version=metric.current_version))
    fusion = Fusion.load(CATALOGUE["camscore/fusion.pt"].path)
    assert len(stored) == 6
    assert [s.value for s in stored] == pytest.approx(fusion([{k: s.detail[k] for k in LEVELS} for s in stored]))
    assert all(
        {"pixel", "semantic", "object", "ciou", "depth", "boxes_original", "matches", "generated_image"}
        <= set(score.detail)
        for score in stored
    )


def test_training_refuses_what_it_cannot_use(vision_store, rated):
    with pytest.raises(CommandError, match="no dataset 'nope'"):
        call_command("metrics", "train", "camscore", "--dataset", "nope")
    with pytest.raises(CommandError, match="two different ones"):
        call_command("metrics", "train", "camscore", "--dataset", "rated", "--split", "train", "--validation", "train")
    Dataset.objects.filter(pk=rated.pk).update(rating_scale={})
    with pytest.raises(CommandError, match="no rating scale"):
        call_command("metrics", "train", "camscore", "--dataset", "rated")


def test_hice_scores_go_through_the_engine_and_the_item_page_shows_phrases_and_regions(client, vision_store, rated):
    item = Item.objects.filter(dataset=rated).order_by("id").first()
    Caption.objects.exclude(item=item).delete()
    run_jobs(dataset_plan(dataset=rated, slugs=["hice_s", "ref_hice_s"]))
    for slug in ("hice_s", "ref_hice_s"):
        stored = list(Score.objects.filter(metric_version__metric__slug=slug))
        assert len(stored) == 2
        for score in stored:
            parts = [
                score.detail[key]
                for key in ("global_itc", "local_itc", "global_ttc", "local_ttc")
                if key in score.detail
            ]
            assert len(parts) == (4 if slug == "ref_hice_s" else 2)
            assert score.value == pytest.approx(harmonic_mean(parts))
        assert all(score.detail["phrases"] and score.detail["regions"] for score in stored)
    page = client.get(f"/datasets/rated/items/{item.pk}/").content.decode()
    phrase = Score.objects.filter(metric_version__metric__slug="hice_s").first().detail["phrases"][0]["text"]
    assert page.count('class="phrases"') == 4
    assert phrase in page
    assert "Regions&#x27; completeness" not in page
    assert "Regions' completeness (their best phrase)" in page


@pytest.mark.parametrize(
    ("split", "validation", "unseen"), [("train", "validation", "test"), ("test", "train", "validation")]
)
def test_a_metric_fitted_on_a_dataset_is_compared_with_it_on_its_unseen_split_only(
    client, rated, split, validation, unseen
):
    from scoring.services.correlations import dataset_correlations
    from scoring.services.metrics import metrics_sync

    metrics_sync()
    metric = Metric.objects.get(slug="camscore")
    version = metric.versions.create(
        version="1",
        config_hash="fitted-on-rated",
        config={"fusion": {"trained_on": {"dataset": "rated", "split": split, "validation": validation}}},
    )
    for caption in Caption.objects.filter(item__dataset=rated):
        Score.objects.create(
            caption=caption,
            metric_version=version,
            value=caption.judgments.first().value + caption.pk % 3,
            input_key=str(caption.pk).encode(),
        )
    results = dataset_correlations(dataset=rated, metric_version=version)
    unseen_captions = sum(
        2
        for external_id in Item.objects.filter(dataset=rated).values_list("external_id", flat=True)
        if item_split("rated", external_id) == unseen
    )
    assert results and {r.n for r in results if r.level == "caption"} == {unseen_captions}
    assert all(f"only the {unseen} split's captions are compared" in r.detail["held_out"] for r in results)
    Metric.objects.filter(pk=metric.pk).update(current_version=version)
    page = client.get("/metrics/camscore/", {"dataset": "rated"}).content.decode()
    assert f"Fitted on Rated's judgments: trained on this dataset&#x27;s {split} split" in page
