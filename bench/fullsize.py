"""Full-size architectures with random weights, saved into a model store exactly as the real weights
are laid out, so a benchmark goes through the metrics' own loading code. Speed does not depend on
trained weights; token counts do depend on the tokenizer, so the tokenizers here are byte-level BPEs
trained on the English text of this repository (README, docs, judge prompts), which split English
into about as many pieces per word as the released ones (each benchmark prints its prompt lengths).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ROBERTA_LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
ROBERTA_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
LLAVA_TEXT = {
    "7b": {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008},
    "13b": {"hidden_size": 5120, "num_hidden_layers": 40, "num_attention_heads": 40, "intermediate_size": 13824},
    "tiny": {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512},
}  # a smoke test of the benchmark itself on a CPU


def english_corpus() -> list[str]:
    """Lines of English prose from this repository (no download)."""
    files = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "evaluation" / "capbench_eval" / "metrics" / "judges" / "prompts").rglob("*.txt")),
    ]
    lines = [line.strip() for path in files for line in path.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if len(line) > 20] or ["a dog runs on the grass"]


def roberta(folder: Path, shape: dict, seed: int = 0) -> None:
    """A random RoBERTa of `shape` with its byte-level BPE tokenizer, saved with save_pretrained."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    if (folder / "config.json").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(
        english_corpus(), vocab_size=50265, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    tokenizer = RobertaTokenizerFast(
        tokenizer_object=trainer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=512,
    )
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, pad_token_id=tokenizer.pad_token_id, **shape
    )
    RobertaModel(config).save_pretrained(folder)


def open_clip_weights(store: Path, architecture: str, pretrained: str = "openai") -> Path:
    import open_clip
    import torch

    path = store / "open_clip" / architecture / f"{pretrained}.pt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(open_clip.create_model(architecture, pretrained=None).state_dict(), path)
    return path


def pac_checkpoint(store: Path) -> None:
    """PAC-S's fine-tuned ViT-B/32 as it ships: {"state_dict": ...}."""
    import torch

    path = store / "checkpoints" / "pacscore" / "clip_ViT-B-32.pth"
    if not path.exists():
        state = torch.load(open_clip_weights(store, "ViT-B-32-quickgelu"), weights_only=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"state_dict": {k: v * 1.01 if v.is_floating_point() else v for k, v in state.items()}}, path)


def polos(store: Path) -> None:
    """SimCSE-RoBERTa-base under its name and a Polos checkpoint of the released layout (scalar mix over
    the 13 hidden states, a 3072 → 2048 → 1024 → 1 head over the ten feature blocks)."""
    import argparse
    import itertools

    import torch

    simcse = store / "hf" / "princeton-nlp" / "sup-simcse-roberta-base"
    roberta(simcse, ROBERTA_BASE, seed=3)
    path = store / "checkpoints" / "polos" / "reprod.ckpt"
    if path.exists():
        return
    from transformers import AutoModel

    state = {f"encoder.model.{k}": v for k, v in AutoModel.from_pretrained(simcse).state_dict().items()}
    layers = ROBERTA_BASE["num_hidden_layers"] + 1
    for index in range(layers):
        state[f"scalar_mix.scalar_parameters.{index}"] = torch.randn(1)
    state["scalar_mix.gamma"] = torch.tensor([1.0])
    state["scalar_mix.dropout_mask"] = torch.zeros(layers)
    state["scalar_mix.dropout_fill"] = torch.full((layers,), -1e20)
    widths = [4 * 768 + 6 * 512, 2048, 1024, 1]
    for index, (inputs, outputs) in enumerate(itertools.pairwise(widths), start=1):
        state[f"ff.0.ff.linear_{index}.weight"] = torch.randn(outputs, inputs) / inputs**0.5
        state[f"ff.0.ff.linear_{index}.bias"] = torch.zeros(outputs)
    clip = torch.load(open_clip_weights(store, "ViT-B-32-quickgelu"), weights_only=True)
    state.update({f"clip.{key}": value for key, value in clip.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    hparams = argparse.Namespace(layer="mix", pool="cls", hidden_sizes="2048,1024", final_activation=False)
    torch.save({"state_dict": state, "hyper_parameters": hparams}, path)


def llava(folder: Path, size: str = "7b") -> None:
    """LLaVA-1.5 (CLIP ViT-L/14 at 336 px, 576 image tokens, a Llama-2 `size` text model, vocabulary
    32,064) in fp16, with llava-hf's processor settings and chat template. Built on the GPU when there
    is one (a 7B model initialised on a CPU takes minutes)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    if (folder / "config.json").exists():
        return
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        english_corpus(),
        trainers.BpeTrainer(
            vocab_size=32000,
            min_frequency=2,
            special_tokens=["<unk>", "<s>", "</s>", "<pad>", "<image>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={"image_token": "<image>"},
    )
    template = (
        "{% for m in messages %}USER: {% for c in m['content'] %}{% if c['type'] == 'image' %}<image>\n"
        "{% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endfor %}{% if add_generation_prompt %} ASSISTANT:"
        "{% endif %}"
    )
    folder.mkdir(parents=True, exist_ok=True)
    LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}),
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        chat_template=template,
        image_token="<image>",
        num_additional_image_tokens=1,
    ).save_pretrained(folder)
    vision = CLIPVisionConfig(
        hidden_size=1024,
        intermediate_size=4096,
        num_hidden_layers=24,
        num_attention_heads=16,
        image_size=336,
        patch_size=14,
        projection_dim=768,
    )
    text = LlamaConfig(
        vocab_size=32064,
        max_position_embeddings=4096,
        num_key_value_heads=None,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **LLAVA_TEXT[size],
    )
    text.num_key_value_heads = text.num_attention_heads
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlavaForConditionalGeneration(config).half()
    model.save_pretrained(folder)
    del model
    (folder / "bench.json").write_text(json.dumps({"random": True, "size": size}))
