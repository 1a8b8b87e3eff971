"""VisCE² against its released code (Silviase/VisCE2, with LLaVA run by haotian-liu/LLaVA), written
out here (metrics.md §14):

- step 1, once per image: prompts/visual_context.txt through the released `Prompter` (it holds none
  of the prompter's placeholders, so it is sent as written);
- step 2, per caption: prompts/visce_2.txt through `Prompter.format` with use_cand and use_context:
  "[task]" → the task line (constants.desc_task, with its newlines), "[cand]" → "Candidate:\\n<caption>",
  "[context]" → "Visual Context:\\n<step 1's reply>";
- both steps sampled at temperature 0.2 with at most 1024 new tokens (llava_v15.py), LLaVA-1.5 given
  "<image>\\n" + prompt inside its llava_v1 conversation (the system line, " USER: ", the message,
  " ASSISTANT:") and the picture padded to a square of the image processor's mean colour
  (`process_images` with the checkpoint's image_aspect_ratio "pad": expand2square);
- the rating: `get_digit_scores`, the first run of ASCII digits as a number, none → 0.

CapBench's own parse differs where documented (a decimal is kept, a number outside 0–100 or no
number is a failure, never 0); the released one is kept in the detail and compared everywhere.
Pictures in RGB, grey, RGBA, palette and palette with a transparent colour (`mode_pictures`,
tests/evaluation/metrics/conftest.py); captions over 77 tokens, outside ASCII and with braces."""

import random
import re
from pathlib import Path

import numpy as np
from PIL import Image

from capbench_eval.metrics import CaptionRow, get
from capbench_eval.metrics.judges.backends import Backend, JudgeReply
from capbench_eval.metrics.judges.parsing import Unparseable

DESC_TASK = (
    "\nOn a precise scale from 0 to 100, rate whether the candidate caption is appropriate for the given image.\n"
)
VISCE_2 = (
    "[task]\nCandidate caption:\n[cand]\n\nUse the image and following visual context to evaluate the candidate "
    "caption:\n[context]\n\nYour final rating must be a single digit between 0 and 100.\n\nAppropriateness(0-100): "
    "How well the caption matches the image's content, atmosphere, and context.\nA score of 0 indicates complete "
    "inappropriateness, while a score of 100 indicates perfect appropriateness."
)
VISUAL_CONTEXT = (
    "Analyze the uploaded image and provide a structured output focusing on the objects, their features, and the "
    "relationships between them. \nSelect up to five of the most important elements. The output should be organized "
    "as follows:\n\nList of Important Objects (up to five):\n\n- Object 1: [Brief description]\n- Object 2: [Brief "
    "description]\n- (Continue as necessary, up to five objects)\n\nFeatures (Specific characteristics and attributes "
    "of each object, such as color, shape, size, and texture):\n\n- Features of Object 1: [Detailed description of "
    "features]\n- Features of Object 2: [Detailed description of features]\n- (Continue as necessary for each "
    "selected object)\n\nRelationships (The way objects interact or are positioned relative to each other, without "
    "using specific object names or symbols):\n\n- Description of a relationship: [General description]\n- Another "
    "relationship: [General description]\n- (Continue as necessary for each relevant relationship)\n\nFocus on "
    "providing unique and detailed insights into the features and relationships of the selected objects up to five "
    "objects."
)
LLAVA_V1_SYSTEM = (
    "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, "
    "detailed, and polite answers to the human's questions."
)
CAPTIONS = [
    "a dog runs on the grass",
    "Ein Hund läuft über die Straße, 犬が走っている — très vite 🐕",
    " ".join(["a long caption about a red bicycle leaning on a wall"] * 12),
    "a caption with braces {0} {candidate} {} and a {{double}} pair",
    "two children sit on a bench " * 20,
    "  spaces around, a tab\tand a newline\ninside  ",
]


def released_prompt(base: str, candidate: str | None = None, context: str | None = None) -> str:
    """Prompter.format for VisCE²'s two prompt files (the placeholders they hold)."""
    prompt = base.replace("[task]", DESC_TASK)
    if candidate is not None:
        prompt = prompt.replace("[cand]", f"Candidate:\n{candidate}")
    if context is not None:
        prompt = prompt.replace("[context]", f"Visual Context:\n{context}")
    return prompt


def released_rating(output: str) -> float:
    """get_digit_scores: the first run of [0-9] as a float; none → 0."""
    found = re.findall(r"[0-9]+", output)
    return float(found[0]) if found else 0.0


def released_conversation(prompt: str) -> str:
    """LLaVA's conv_templates["llava_v1"] with "<image>\\n" + prompt as the user's message:
    system + sep, "USER: " + message + sep, "ASSISTANT:" (SeparatorStyle.TWO, sep " ")."""
    return LLAVA_V1_SYSTEM + " " + "USER: " + "<image>\n" + prompt + " " + "ASSISTANT:"


def released_square(picture: Image.Image, background: tuple[int, ...]) -> Image.Image:
    """expand2square: the picture on a square of the background colour, the shorter side centred
    (offset rounded down)."""
    width, height = picture.size
    if width == height:
        return picture
    side = max(width, height)
    result = Image.new(picture.mode, (side, side), background)
    result.paste(picture, (0, (side - height) // 2) if width > height else ((side - width) // 2, 0))
    return result


class ScriptedBackend(Backend):
    """Answers step 1 with a context per image and step 2 with a rating; keeps every request."""

    name = "scripted"

    def __init__(self, contexts: dict[bytes, str], rating: str):
        self.contexts, self.rating, self.requests, self.params = contexts, rating, [], []

    def unavailable_reason(self):
        return None

    def fingerprint(self):
        return "scripted"

    def prompt_tokens(self, request):
        return 0

    def _complete(self, requests, params):
        self.requests.extend(requests)
        self.params.append(params)
        return [JudgeReply(self.contexts[r.image] if r.prompt == VISUAL_CONTEXT else self.rating, []) for r in requests]


def test_both_steps_send_the_released_prompts_with_the_picture(mode_pictures, tmp_path, monkeypatch):
    from capbench_eval.metrics.judges.visce2 import VisCE2

    monkeypatch.setenv("CAPBENCH_JUDGE_CACHE_DIR", str(tmp_path / "judge-cache"))
    files = {path: Path(path).read_bytes() for path in mode_pictures}
    contexts = {
        content: f"List of Important Objects:\n- Object {i}: a thing, ünïcödé 犬 [Brief description]\n- Object 2: {{x}}"
        for i, content in enumerate(files.values())
    }
    backend = ScriptedBackend(contexts, "Rating: 85. Good.")
    monkeypatch.setattr(VisCE2, "backend", lambda self: backend)
    paths = [*mode_pictures, mode_pictures[0]]  # the first picture twice: one context for both
    captions = [*CAPTIONS, "again"]
    rows = [CaptionRow(str(i), text, (), path) for i, (text, path) in enumerate(zip(captions, paths, strict=True))]
    result = get("visce2").score(rows)

    first = [r for r in backend.requests if r.prompt == VISUAL_CONTEXT]
    assert [r.image for r in first] == list(files.values())  # once per distinct image, the file as it is
    ratings = [r for r in backend.requests if r.prompt != VISUAL_CONTEXT]
    assert len(ratings) == len(rows)
    for row, request in zip(rows, ratings, strict=True):
        context = contexts[files[row.media]]
        assert request.prompt == released_prompt(VISCE_2, row.candidate, context)
        assert request.image == files[row.media]
    assert all(p.temperature == 0.2 and p.max_tokens == 1024 for p in backend.params)
    assert result.scores == [85.0] * len(rows)
    assert all(d["reference_parse"] == 85.0 and d["visual_context"] for d in result.details)


REPLY_PIECES = [
    "Rating: ",
    "85",
    "100",
    "101",
    "250",
    "7.5",
    "0",
    "-3",
    "007",
    "/100",
    " out of 100",
    "\n",
    "٨٥",  # Eastern Arabic digits: no [0-9] in them
    "½",
    "The caption is fine.",
    ".",
    "-",
    "1e2",
    "犬",
]


def test_the_rating_is_the_released_one_wherever_it_is_a_rating_in_0_to_100():
    """On random replies: the detail's reference_parse is get_digit_scores' number, always. The score
    equals it when the reply's first number is a plain integer within 0–100; otherwise it is what
    metrics.md §14 documents instead: the decimal itself (7.5, not 7), or a failure (a negative number,
    one above 100, no number at all, where the released parse gives the digits or 0)."""
    from capbench_eval.metrics.judges.visce2 import VisCE2

    metric, row = VisCE2(), CaptionRow("1", "a dog", (), "unused.png")
    generator = random.Random(14)
    seen = {"same": 0, "decimal": 0, "refused": 0}
    for _ in range(1500):
        text = "".join(generator.choice(REPLY_PIECES) for _ in range(generator.randint(1, 6)))
        released = released_rating(text)
        first = re.search(r"-?[0-9]+(\.[0-9]+)?", text)
        try:
            score, detail = metric.parse(row, JudgeReply(text, []))
        except Unparseable:
            score, detail = None, None
        if detail is not None:
            assert detail["reference_parse"] == released, text
        value = float(first.group()) if first else None
        if value is not None and 0 <= value <= 100 and first.group(1) is None:  # ("-0" is 0 too)
            assert score == released, text
            seen["same"] += 1
        elif value is not None and 0 <= value <= 100:
            assert score == value and int(score) == released, text
            seen["decimal"] += 1
        else:
            assert score is None, text
            seen["refused"] += 1
    assert min(seen.values()) > 50


class Recorder:
    """The local backend's processor, recording the chat text and the pictures it is given."""

    def __init__(self, processor, template):
        self.inner, self.texts, self.images = processor, [], []
        self.inner.chat_template = template

    def apply_chat_template(self, messages, **kwargs):
        text = self.inner.apply_chat_template(messages, **kwargs)
        self.texts.append(text)
        return text

    def __call__(self, images=None, **kwargs):
        self.images.extend(images or [])
        return self.inner(images=images, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


# llava-hf's LLaVA-1.5 chat template, as it behaves: a system message is its text and a space (no role),
# a user message "USER: " then its pictures ("<image>\n" each) then its text and a space; "ASSISTANT:".
LLAVA_HF_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] != 'system' %}{{ m['role'].upper() + ': ' }}{% endif %}"
    "{% for c in m['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in m['content'] | selectattr('type', 'equalto', 'text') %}{{ c['text'] + ' ' }}{% endfor %}"
    "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def test_llava_sees_both_steps_inside_its_conversation_with_the_picture_padded(llava_store, mode_pictures):
    """Both requests VisCE² builds, through the local LLaVA-1.5 backend (its processor given llava-hf's
    template): the chat text is the released llava_v1 prompt, and each picture (opened and converted
    to RGB) is expand2square'd with the processor's mean colour, so the processor's crop keeps it all."""
    from capbench_eval.backbones.catalogue import CATALOGUE
    from capbench_eval.metrics.judges.backends import JudgeRequest, LocalVLM
    from capbench_eval.metrics.judges.base import image_bytes
    from capbench_eval.metrics.judges.prompts import prompt_text
    from capbench_eval.metrics.judges.visce2 import CONTEXT_PROMPT, VisCE2

    backend = LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"])
    recorder = Recorder(backend.processor(), LLAVA_HF_TEMPLATE)
    backend.processor = lambda: recorder
    metric = VisCE2()
    context = "- Object 1: a grey square\n- Object 2: ünïcödé"
    metric._contexts = {path: JudgeReply(context, []) for path in mode_pictures}
    for caption, path in zip(CAPTIONS, mode_pictures, strict=True):
        step_one = JudgeRequest(prompt_text(CONTEXT_PROMPT), *image_bytes(path))  # as VisCE2.prepare builds it
        backend.inputs([step_one, metric.request(CaptionRow("1", caption, (), path), 0)])
    mean = tuple(int(v * 255) for v in recorder.inner.image_processor.image_mean)
    expected_texts, expected_images = [], []
    for caption, path in zip(CAPTIONS, mode_pictures, strict=True):
        expected_texts.append(released_conversation(VISUAL_CONTEXT))
        expected_texts.append(released_conversation(released_prompt(VISCE_2, caption, context)))
        square = released_square(Image.open(path).convert("RGB"), mean)
        expected_images += [square, square]
    assert recorder.texts == expected_texts
    assert len(recorder.images) == len(expected_images)
    for ours, expected in zip(recorder.images, expected_images, strict=True):
        assert ours.size == expected.size
        assert ours.size[0] == ours.size[1]
        assert np.array_equal(np.asarray(ours), np.asarray(expected))
