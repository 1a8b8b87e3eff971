"""Polos on a tiny SimCSE, a tiny CLIP and a random head saved as the authors' Lightning checkpoint:
the feature order and the layer mix by hand, an independent forward of the released architecture
(its own module names, its whole-batch layer norm at batch size 1) as the oracle, batching, and
honest refusals."""

import fractions

import numpy as np
import pytest
import torch

from capbench_eval.metrics import CaptionRow, MetricUnavailable
from capbench_eval.metrics.embedding.polos import (
    CHECKPOINT,
    CLIP_MODEL,
    PREFIX,
    TEXT_MODEL,
    Polos,
    mix_layers,
    pair_features,
    polos_model,
    read_checkpoint,
)
from tests.fixtures.models import POLOS_TEXT_LAYERS


def test_features_follow_the_released_order():
    r, c = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 5.0]])
    v, cc, rc = torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([[1.0, 4.0, -1.0]]), torch.tensor([[0.5, 0.0, 2.0]])
    features = pair_features(r, c, v, cc, rc)[0].tolist()
    assert features == [
        1,
        -2,
        3,
        5,
        2,
        7,
        3,
        -10,  # r, c, |c−r|, c⊙r
        2,
        1,
        0,
        1,
        4,
        -1,
        1,
        3,
        1,
        2,
        4,
        0,  # v, c', |v−c'|, v⊙c'
        0.5,
        4,
        3,
        0.5,
        0,
        -2,
    ]  # |r'−c'|, r'⊙c'


def test_layer_mix_normalises_each_sentence_over_its_own_unmasked_tokens():
    # 2 layers, 1 sentence of 2 real tokens (+1 padding), hidden 2.
    layers = torch.tensor([[[[1.0, 3.0], [5.0, 7.0], [100.0, -100.0]]], [[[0.0, 0.0], [0.0, 4.0], [9.0, 9.0]]]])
    mask = torch.tensor([[1, 1, 0]])
    weights, gamma = torch.tensor([0.0, np.log(3.0)], dtype=torch.float32), torch.tensor(2.0)
    mixed = mix_layers(layers, mask, weights, gamma)
    first = (np.array([1, 3, 5, 7]) - 4) / np.sqrt(5 + 1e-12)  # mean 4, variance 5
    second = (np.array([0, 0, 0, 4]) - 1) / np.sqrt(3 + 1e-12)  # mean 1, variance 3
    expected = 2 * (0.25 * first + 0.75 * second)  # softmax(0, log 3) = (¼, ¾)
    assert mixed[0, :2].reshape(-1).numpy() == pytest.approx(expected, abs=1e-6)
    # Another sentence in the same batch changes nothing (the released code's batch-wide norm would).
    other = torch.tensor([[[[9.0, 9.0], [0.0, 1.0], [0.0, 0.0]]], [[[2.0, 2.0], [1.0, 1.0], [0.0, 0.0]]]])
    together = mix_layers(torch.cat([layers, other], dim=1), torch.tensor([[1, 1, 0], [1, 1, 1]]), weights, gamma)
    assert together[0, :2].numpy() == pytest.approx(mixed[0, :2].numpy(), abs=1e-6)


def released_layer_norm_mix(layers, mask, weights, gamma):
    """The released scalar mix: ONE mean and variance over all unmasked tokens of the whole batch."""
    keep = mask.float().unsqueeze(-1)
    count = mask.float().sum() * layers[0].shape[-1]
    pieces = []
    for share, tensor in zip(torch.softmax(weights, 0), layers, strict=True):
        mean = (tensor * keep).sum() / count
        variance = (((tensor * keep) - mean) * keep).pow(2).sum() / count
        pieces.append(share * (tensor - mean) / torch.sqrt(variance + 1e-12))
    return gamma * sum(pieces)


def released_forward(store, checkpoint, rows):
    """Polos written out the way the released estimator runs, one (candidate, reference) at a time."""
    import open_clip
    from PIL import Image
    from transformers import AutoModel, AutoTokenizer

    state = torch.load(checkpoint, weights_only=False)["state_dict"]
    simcse = store / "hf" / "princeton-nlp" / "sup-simcse-roberta-base"
    tokenizer, encoder = AutoTokenizer.from_pretrained(simcse), AutoModel.from_pretrained(simcse).eval()
    encoder.load_state_dict({k[len("encoder.model.") :]: v for k, v in state.items() if k.startswith("encoder.model.")})
    weights = torch.cat([state[f"scalar_mix.scalar_parameters.{i}"] for i in range(POLOS_TEXT_LAYERS + 1)])
    feed_forward = torch.nn.Sequential()  # FeedForward's own module names, so its keys load strictly
    for index in (1, 2, 3):
        weight = state[f"ff.0.ff.linear_{index}.weight"]
        feed_forward.add_module(f"linear_{index}", torch.nn.Linear(weight.shape[1], weight.shape[0]))
        if index < 3:
            feed_forward.add_module(f"activation_{index}", torch.nn.Tanh())
            feed_forward.add_module(f"dropout_{index}", torch.nn.Dropout(0.1))
    feed_forward.load_state_dict({k[len("ff.0.ff.") :]: v for k, v in state.items() if k.startswith("ff.0.ff.")})
    feed_forward.eval()
    clip, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32-quickgelu", pretrained=None)
    clip.load_state_dict({k[len("clip.") :]: v for k, v in state.items() if k.startswith("clip.")})
    clip.eval()
    clip_tokens = open_clip.get_tokenizer("ViT-B-32-quickgelu")

    def sentence(text):
        batch = tokenizer([text], return_tensors="pt")
        hidden = encoder(**batch, output_hidden_states=True).hidden_states
        return released_layer_norm_mix(hidden, batch["attention_mask"], weights, state["scalar_mix.gamma"])[:, 0]

    out = []
    with torch.no_grad():
        for row in rows:
            image = clip.encode_image(preprocess(Image.open(row.media).convert("RGB"))[None])
            candidate_clip = clip.encode_text(clip_tokens([PREFIX + row.candidate]))
            candidate = sentence(row.candidate)
            scores = []
            for reference in row.references:
                ref, ref_clip = sentence(reference), clip.encode_text(clip_tokens([PREFIX + reference]))
                x = torch.cat(
                    (
                        ref,
                        candidate,
                        torch.abs(candidate - ref),
                        candidate * ref,
                        image,
                        candidate_clip,
                        torch.abs(image - candidate_clip),
                        image * candidate_clip,
                        torch.abs(ref_clip - candidate_clip),
                        ref_clip * candidate_clip,
                    ),
                    dim=1,
                )
                scores.append(torch.sigmoid(feed_forward(x)).item())
            out.append(max(scores))
    return out


def rows(images):
    return [
        CaptionRow("0", "a dog runs on the grass", ("a dog on grass", "the cat sleeps", "people walk"), images[0]),
        CaptionRow("1", "two children on a bench", ("two children sit on a bench",), images[1]),
        CaptionRow("2", "a man in the rain", ("a woman holds an umbrella in the rain", "a man"), images[2]),
        CaptionRow("3", "a red sofa", ("the cat sleeps on a red sofa", "a sofa"), images[3]),
        CaptionRow("4", "a dog runs on the grass", ("a bike down a hill",), images[3]),
    ]


def test_polos_equals_the_released_architecture_run_one_pair_at_a_time(model_store, polos_store, images):
    result = Polos().score(rows(images))
    assert result.scores == pytest.approx(released_forward(model_store, polos_store, rows(images)), abs=1e-5)
    assert all(0.0 < value < 1.0 for value in result.scores)
    first = result.details[0]
    assert len(first["per_reference"]) == 3
    assert max(first["per_reference"]) == result.scores[0]
    assert first["per_reference"][first["best_reference"]] == result.scores[0]
    assert result.corpus == pytest.approx(np.mean(result.scores))


def test_batched_equals_one_by_one(model_store, polos_store, images):
    together = Polos().score(rows(images)).scores
    assert together == pytest.approx([Polos().score([row]).scores[0] for row in rows(images)], abs=1e-6)
    assert together[0] != pytest.approx(together[4], abs=1e-6)  # same caption, different image and references


def test_without_the_checkpoint_polos_refuses_and_says_why(model_store, images):
    polos_model.cache_clear()
    availability = Polos().availability()
    assert not availability.available and "polos/reprod.ckpt is not in the model store" in availability.reason
    assert "Polos README" in availability.reason
    with pytest.raises(MetricUnavailable, match="reprod.ckpt"):
        Polos().score(rows(images))
    assert Polos().config()["weights"] == "absent"


def test_without_simcse_polos_refuses(model_store, polos_store, images):
    import shutil

    shutil.rmtree(model_store / "hf" / "princeton-nlp")
    assert "princeton-nlp/sup-simcse-roberta-base is not in the model store" in Polos().availability().reason


def resave(path, change):
    saved = torch.load(path, weights_only=False)
    change(saved["state_dict"])
    torch.save(saved, path)
    polos_model.cache_clear()


def test_a_checkpoint_whose_clip_differs_from_the_store_is_refused(model_store, polos_store, images):
    resave(polos_store, lambda state: state["clip.positional_embedding"].add_(0.5))
    with pytest.raises(MetricUnavailable, match="CLIP differs .* positional_embedding"):
        Polos().score(rows(images))


def test_a_head_that_does_not_fit_the_encoders_is_refused(model_store, polos_store, images):
    def widen(state):
        state["ff.0.ff.linear_1.weight"] = torch.zeros(24, 4 * 768 + 6 * 512)

    resave(polos_store, widen)
    with pytest.raises(MetricUnavailable, match="takes 6144 features"):
        Polos().score(rows(images))


def test_new_weights_make_a_new_metric_version(model_store, polos_store):
    before = Polos().config()["weights"]
    assert before.startswith("polos:")
    assert "sup-simcse-roberta-base" in before
    resave(polos_store, lambda state: state["scalar_mix.gamma"].add_(1.0))
    assert Polos().config()["weights"] != before


def test_the_checkpoint_is_read_without_unpickling_arbitrary_objects(model_store, polos_store):
    saved = torch.load(polos_store, weights_only=False)
    saved["hyper_parameters"] = fractions.Fraction(1, 3)  # a global the loader does not allow
    torch.save(saved, polos_store)
    from capbench_eval.metrics.embedding.polos import read_checkpoint

    with pytest.raises(Exception, match="Unsupported global|weights_only"):
        read_checkpoint(polos_store)


def test_a_clip_running_in_half_precision_is_the_same_clip(model_store, polos_store, images):
    """On a GPU the store's CLIP runs in fp16 while the checkpoint keeps an fp32 copy: the same weights,
    compared at the precision the encoder runs in, must not be refused (they were, on every GPU)."""
    model = polos_model(CHECKPOINT, TEXT_MODEL, CLIP_MODEL)
    model.clip.model().half()
    state = read_checkpoint(polos_store)
    model._check_clip(state)  # no MetricUnavailable
    state["clip.positional_embedding"] = state["clip.positional_embedding"] + 0.5
    with pytest.raises(MetricUnavailable, match="positional_embedding"):
        model._check_clip(state)


def test_polos_converts_on_opening_as_released_on_every_picture_mode(model_store, polos_store, mode_pictures):
    """The released code converts to RGB on opening (unlike CLIP-S, which converts after the crop):
    the same numbers on grey, RGBA and palette pictures and on captions over CLIP's 77 tokens and
    outside ASCII; and CLIP-S scoring the same files in between serves Polos no feature of its order."""
    from capbench_eval.metrics.embedding.clip_score import ClipScore

    long = "a dog runs on the grass and " * 14  # over 77 CLIP tokens
    batch = [
        CaptionRow(str(i), caption, refs, path)
        for i, (caption, refs, path) in enumerate(
            zip(
                [long, "Ein Hund läuft über die Straße 犬", "a red sofa", "the cat sleeps", "people walk", "a man"],
                [("a dog on grass",), (long, "a dog"), ("a sofa", "Ünïcödé"), ("a cat",), ("people",), ("a bike",)],
                mode_pictures,
                strict=True,
            )
        )
    ]
    expected = released_forward(model_store, polos_store, batch)
    ClipScore().score(batch)  # caches its own (converted after the crop) features of the same files first
    assert Polos().score(batch).scores == pytest.approx(expected, abs=1e-5)
