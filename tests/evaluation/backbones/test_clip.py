"""The CLIP encoder: raw and normalised features from one cache of raw image features."""

import numpy as np
import pytest

from capbench_eval.backbones.catalogue import OpenClipModel
from capbench_eval.backbones.clip import clip_encoder

MODEL = OpenClipModel("ViT-B-32-quickgelu", "openai")


def test_normalised_rows_are_the_raw_rows_scaled_to_unit_length(model_store, images):
    encoder = clip_encoder(MODEL)
    raw = encoder.encode_images(images, normalise=False)
    unit = encoder.encode_images(images)
    assert np.linalg.norm(unit, axis=1) == pytest.approx(np.ones(len(images)), abs=1e-6)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    assert unit == pytest.approx(raw / np.linalg.norm(raw, axis=1, keepdims=True), abs=1e-6)
    texts = ["a dog", "a cat", "a dog"]
    raw_texts = encoder.encode_texts(texts, normalise=False)
    assert raw_texts[0] == pytest.approx(raw_texts[2])
    assert encoder.encode_texts(texts) == pytest.approx(
        raw_texts / np.linalg.norm(raw_texts, axis=1, keepdims=True), abs=1e-6
    )


def test_the_cache_keeps_raw_features_and_serves_both_forms(model_store, images):
    encoder = clip_encoder(MODEL)
    cache = encoder.feature_cache()
    raw = encoder.encode_images(images[:2], cache=cache, normalise=False)
    encoded = encoder.images_encoded
    unit = encoder.encode_images(images[:2], cache=encoder.feature_cache())
    assert encoder.images_encoded == encoded  # the second call read the cache
    assert unit == pytest.approx(raw / np.linalg.norm(raw, axis=1, keepdims=True), abs=1e-6)
    stored = sorted(cache.folder.rglob("*.npy"))
    assert len(stored) == 2
    assert all(abs(np.linalg.norm(np.load(path)) - 1.0) > 1e-3 for path in stored)  # raw, not unit rows


def test_trimmed_text_encoding_equals_open_clip_on_the_full_77_tokens(model_store):
    import open_clip
    import torch

    from capbench_eval.backbones.clip import encode_text_trimmed

    encoder = clip_encoder(MODEL)
    model = encoder.model()
    tokenizer = open_clip.get_tokenizer("ViT-B-32-quickgelu")
    texts = ["a dog", "a photo depicts two children sitting on a long wooden bench in a sunny park", "cat"]
    tokens = tokenizer(texts)
    with torch.no_grad():
        full = model.encode_text(tokens).numpy()
        trimmed = encode_text_trimmed(model, tokens).numpy()
    assert trimmed == pytest.approx(full, abs=1e-5)
    # and through the encoder, whose batches are sorted by length and put back in order
    assert encoder.encode_texts(texts, normalise=False) == pytest.approx(full, abs=1e-5)
    assert encoder.encode_texts([]).shape == (0, 0)


def test_images_are_prepared_in_threads_as_in_sequence_also_after_a_fork(model_store, images):
    """The decoding threads give the tensors a plain loop gives; a forked worker (Celery's prefork)
    makes its own threads instead of waiting forever on the parent's."""
    import multiprocessing

    import torch
    from PIL import Image

    from capbench_eval.backbones.clip import prepared

    _, preprocess, _ = clip_encoder(OpenClipModel("ViT-B-32-quickgelu", "openai"))._load()
    threaded = prepared(images, preprocess)  # the parent's pool now exists
    assert all(torch.equal(a, preprocess(Image.open(p).convert("RGB"))) for a, p in zip(threaded, images, strict=True))
    child = multiprocessing.get_context("fork").Process(target=prepared, args=(images, preprocess))
    child.start()
    child.join(timeout=60)
    if child.exitcode is None:  # hung: not left running after the test
        child.kill()
        child.join()
        pytest.fail("the forked child did not finish preparing its images within 60 s")
    assert child.exitcode == 0


def test_texts_are_encoded_once_per_process_and_give_the_same_rows(model_store):
    from capbench_eval.backbones.clip import ClipEncoder

    encoder = clip_encoder(MODEL)
    first = encoder.encode_texts(["a dog", "a cat"], normalise=False)
    assert encoder.texts_encoded == 2
    again = encoder.encode_texts(["a cat", "a bird", "a dog"], normalise=False)
    assert encoder.texts_encoded == 3  # only "a bird" was new
    assert again[[2, 0]] == pytest.approx(first, abs=0)
    fresh = ClipEncoder(MODEL).encode_texts(["a cat", "a bird", "a dog"], normalise=False)  # no memo
    assert again == pytest.approx(fresh, abs=1e-6)


def test_the_text_memo_forgets_the_least_recently_used(model_store, monkeypatch):
    from capbench_eval.backbones.clip import ClipEncoder, Memo

    encoder = ClipEncoder(MODEL)
    encoder._load()  # (a build starts a fresh memo: the weights may have changed)
    encoder.text_memo = Memo(2)
    encoder.encode_texts(["one", "two"])
    encoder.encode_texts(["one"])  # "one" is now the most recently used
    encoder.encode_texts(["three"])  # drops "two"
    assert len(encoder.text_memo) == 2
    assert encoder.texts_encoded == 3
    encoder.encode_texts(["one", "three"])
    assert encoder.texts_encoded == 3
    encoder.encode_texts(["two"])
    assert encoder.texts_encoded == 4


def test_encoders_sharing_a_tokenizer_tokenise_each_text_once(model_store, monkeypatch):
    import open_clip

    from capbench_eval.backbones import clip

    clip.token_memo.cache_clear()
    calls: list[int] = []
    real = open_clip.get_tokenizer

    def counting(name, *args, **kwargs):
        tokenizer = real(name, *args, **kwargs)

        class Counting(type(tokenizer)):  # the same tokenizer, counting the texts it is given
            def __call__(self, texts, *a, **k):
                calls.append(len(texts))
                return super().__call__(texts, *a, **k)

        tokenizer.__class__ = Counting
        return tokenizer

    monkeypatch.setattr(open_clip, "get_tokenizer", counting)
    try:
        one, other = clip.ClipEncoder(MODEL), clip.ClipEncoder(MODEL, fp16_on_cuda=False)
        one.encode_texts(["a dog", "a cat"])
        other.encode_texts(["a cat", "a dog", "a bird"])
        assert calls == [2, 1]
        assert other.texts_encoded == 3  # its own features, the first one's tokens
    finally:
        clip.token_memo.cache_clear()


def test_one_encoder_however_the_arguments_are_written(model_store):
    assert clip_encoder(MODEL) is clip_encoder(MODEL, None, True) is clip_encoder(MODEL, fp16_on_cuda=True)
    assert clip_encoder(MODEL, None, False) is not clip_encoder(MODEL)


def test_a_rebuilt_encoder_forgets_the_features_of_the_old_weights(model_store):
    encoder = clip_encoder(MODEL)
    encoder.encode_texts(["a dog"])
    assert encoder.unload()
    encoder.encode_texts(["a dog"])
    assert encoder.texts_encoded == 2  # encoded again by the rebuilt model, not served from memory


def test_out_of_memory_halves_the_batch_from_the_failed_part_and_keeps_it(model_store, images, monkeypatch):
    import torch

    encoder = clip_encoder(MODEL)
    expected = encoder.encode_images(images, normalise=False)
    model = encoder.model()
    real, sizes = model.encode_image, []

    def tight(pixels, *args, **kwargs):  # a device that holds two pictures at once
        sizes.append(len(pixels))
        if len(pixels) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(pixels, *args, **kwargs)

    monkeypatch.setattr(model, "encode_image", tight)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    encoder.image_batch = 64
    again = encoder.encode_images(images, normalise=False)  # no cache given: encoded again
    assert sizes[0] == len(images)
    assert sizes[1] == len(images) // 2
    assert encoder.image_batch == 2
    assert again == pytest.approx(expected, abs=1e-5)
    sizes.clear()
    encoder.encode_images(images, normalise=False)
    assert max(sizes) == 2  # remembered: no out-of-memory again
