"""Where judge prompts are answered: any OpenAI-compatible chat-completions endpoint (OpenAI, Azure,
a local vLLM/SGLang server), or a transformers vision-language model from the local model store.
Both return the same `JudgeReply`: the text, each generated token with its log-probability and top
alternatives, and the tokens used. Replies are cached on disk by everything that determines them.

openai, torch and transformers are imported inside the methods that use them: importing the metrics
must not load them (a CPU web process never needs them)."""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from capbench_eval import config
from capbench_eval.backbones.catalogue import CATALOGUE, HfModel, folder_sha256, offline
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use
from capbench_eval.backbones.store import model_dir
from capbench_eval.files import atomic_write_text
from capbench_eval.metrics.judges.estimate import image_tokens, text_tokens
from capbench_eval.metrics.judges.parsing import Token

if TYPE_CHECKING:
    from PIL import Image
    from transformers import ProcessorMixin

# LLaVA-1.5 as the released VisCE² and FLEUR run it (haotian-liu/LLaVA, metrics.md §14, §16): the
# prompt inside LLaVA's "llava_v1" conversation, "<system> USER: <image>\n<prompt> ASSISTANT:", and
# the picture padded to a square of the image processor's mean colour before its resize and crop
# (the checkpoints' `image_aspect_ratio: pad`). llava-hf's chat template renders a system message as
# its text and a space before "USER: " and adds none of its own; its processor crops the centre of a
# picture that is not square. Without both, LLaVA answers another prompt about a cropped picture.
LLAVA_V1_SYSTEM = (
    "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, "
    "detailed, and polite answers to the human's questions."
)
LLAVA_V1_MODELS = frozenset({"llava-hf/llava-1.5-13b-hf", "llava-hf/llava-1.5-7b-hf"})


def padded_square(picture: Image.Image, colour: tuple[int, ...]) -> Image.Image:
    """The picture centred on a square of `colour` as wide as its longer side (LLaVA's expand2square:
    the offset of the shorter side is rounded down)."""
    from PIL import Image  # here: importing the library must not need Pillow

    width, height = picture.size
    if width == height:
        return picture
    side = max(width, height)
    square = Image.new(picture.mode, (side, side), colour)
    square.paste(picture, ((side - width) // 2, (side - height) // 2))
    return square


@dataclass(frozen=True)
class JudgeParams:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int | None = None
    top_logprobs: int = 5
    seed: int = 0


@dataclass(frozen=True)
class JudgeRequest:
    prompt: str
    image: bytes | None = None  # the encoded picture sent with the prompt
    image_mime: str = "image/jpeg"
    detail: str = "low"  # OpenAI's image detail
    as_system: bool = False  # no picture: the prompt goes as one system message (G-VEval)
    sample: int = 0  # another draw of the same prompt (after an unparseable reply)
    watch: tuple[str, ...] = ()  # tokens whose log-probability is wanted at every position

    def key(self, backend: str, params: JudgeParams) -> str:
        image = hashlib.sha256(self.image).hexdigest() if self.image is not None else None
        text = json.dumps(
            {
                "backend": backend,
                "params": asdict(params),
                "prompt": self.prompt,
                "image": image,
                "mime": self.image_mime,
                "detail": self.detail,
                "system": self.as_system,
                "sample": self.sample,
                "watch": list(self.watch),
            },
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class JudgeReply:
    text: str
    tokens: list[Token]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    watched: list[dict[str, float]] = field(default_factory=list)  # per position, for `watch`
    cached: bool = False

    def to_json(self) -> dict:
        return {
            "text": self.text,
            "tokens": [[t.text, t.logprob, t.top] for t in self.tokens],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "watched": self.watched,
        }

    @classmethod
    def from_json(cls, data: dict) -> JudgeReply:
        return cls(
            data["text"],
            [Token(t, lp, top) for t, lp, top in data["tokens"]],
            data["prompt_tokens"],
            data["completion_tokens"],
            data["model"],
            data.get("watched", []),
            cached=True,
        )


class JudgeFailed(RuntimeError):
    """The backend gave no reply (after its retries); the message says why."""


def judge_cache_dir() -> Path:
    return config.env.judge_cache_dir or model_dir().parent / "judge-replies"


class ReplyCache:
    def __init__(self, root: Path | None = None):
        self.root = root or judge_cache_dir()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> JudgeReply | None:
        path = self._path(key)
        return JudgeReply.from_json(json.loads(path.read_text())) if path.is_file() else None

    def put(self, key: str, reply: JudgeReply) -> None:
        atomic_write_text(self._path(key), json.dumps(reply.to_json()))


class Backend:
    """Answers requests, `concurrency` at a time, through the reply cache."""

    name: str = ""
    concurrency: int = 1

    def unavailable_reason(self) -> str | None:
        raise NotImplementedError

    def fingerprint(self) -> str:
        """Everything that determines a reply (the cache key's backend part)."""
        raise NotImplementedError

    def identity(self) -> str:
        """What goes into a metric's configuration: a new model or new weights make a new version."""
        return self.fingerprint()

    counting: str = ""  # how `prompt_tokens` counts

    def prompt_tokens(self, request: JudgeRequest) -> int:
        """The prompt tokens this request would be billed or computed for, without sending it."""
        raise NotImplementedError

    def is_cached(self, request: JudgeRequest, params: JudgeParams, cache: ReplyCache) -> bool:
        return cache.get(request.key(self.fingerprint(), params)) is not None

    def _complete(self, requests: Sequence[JudgeRequest], params: JudgeParams) -> list[JudgeReply | JudgeFailed]:
        raise NotImplementedError

    def complete(
        self, requests: Sequence[JudgeRequest], params: JudgeParams, cache: ReplyCache | None = None
    ) -> list[JudgeReply | JudgeFailed]:
        """One reply (or the failure) per request, in order; cached replies are not asked again."""
        fingerprint = self.fingerprint()
        keys = [request.key(fingerprint, params) for request in requests]
        found: dict[int, JudgeReply | JudgeFailed] = {}
        for index, key in enumerate(keys):
            cached = cache.get(key) if cache else None
            if cached is not None:
                found[index] = cached
        todo = [i for i in range(len(requests)) if i not in found]
        for index, reply in zip(todo, self._complete([requests[i] for i in todo], params), strict=True):
            found[index] = reply
            if cache is not None and isinstance(reply, JudgeReply):
                cache.put(keys[index], reply)
        return [found[index] for index in range(len(requests))]


class OpenAICompatible(Backend, LazyModel):
    """Chat completions with logprobs through the `openai` client, any base URL. Rate limits (429)
    wait for Retry-After (else exponential backoff) and retry up to `rate_limit_attempts`; timeouts,
    connection errors and 5xx retry up to `error_attempts`; other errors fail the request. The
    client is built once, on first use (a LazyModel that takes no GPU memory, so never unloaded)."""

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key: str | None,
        *,
        concurrency: int = 4,
        timeout: float = 60.0,
        rate_limit_attempts: int = 8,
        error_attempts: int = 3,
        backoff: float = 1.0,
        backoff_cap: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model, self.base_url, self.api_key = model, base_url, api_key
        self.name = f"openai-compatible:{model}"
        self.concurrency, self.timeout = max(1, concurrency), timeout
        self.rate_limit_attempts, self.error_attempts = rate_limit_attempts, error_attempts
        self.backoff, self.backoff_cap, self.sleep = backoff, backoff_cap, sleep
        super().__init__()

    def unavailable_reason(self) -> str | None:
        if not self.base_url and not self.api_key:
            return (
                "no judge endpoint is configured: set CAPBENCH_JUDGE_BASE_URL (an OpenAI-compatible server) "
                "and/or CAPBENCH_JUDGE_API_KEY"
            )
        return None

    def fingerprint(self) -> str:
        return f"{self.name}@{self.base_url or 'https://api.openai.com/v1'}"

    def identity(self) -> str:
        return self.name  # the same model behind another URL (OpenAI, Azure) is the same judge

    def build(self):
        from openai import OpenAI

        return OpenAI(base_url=self.base_url, api_key=self.api_key or "unused", max_retries=0, timeout=self.timeout)

    def client(self):
        return self._load()

    counting = "approximate: text at 4 characters a token, pictures by OpenAI's tile rule"
    MESSAGE_OVERHEAD = 7  # role and separators around the one message, and the reply's priming

    def prompt_tokens(self, request: JudgeRequest) -> int:
        tokens = text_tokens(request.prompt) + self.MESSAGE_OVERHEAD
        if request.image is not None:
            tokens += image_tokens(*picture_size(request.image), request.detail)
        return tokens

    def messages(self, request: JudgeRequest) -> list[dict]:
        if request.image is None:
            role = "system" if request.as_system else "user"
            return [{"role": role, "content": request.prompt}]
        url = f"data:{request.image_mime};base64,{base64.b64encode(request.image).decode()}"
        return [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": request.prompt},
                    {"type": "image_url", "image_url": {"url": url, "detail": request.detail}},
                ],
            }
        ]

    def _complete(self, requests: Sequence[JudgeRequest], params: JudgeParams) -> list[JudgeReply | JudgeFailed]:
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(lambda request: self._one(request, params), requests))

    def _one(self, request: JudgeRequest, params: JudgeParams) -> JudgeReply | JudgeFailed:
        import openai

        limited = failed = 0
        arguments = {
            "model": self.model,
            "messages": self.messages(request),
            "temperature": params.temperature,
            "top_p": params.top_p,
            "frequency_penalty": 0,
            "presence_penalty": 0,
            "n": 1,
            "logprobs": params.top_logprobs > 0,
            "seed": params.seed,
        }
        if params.top_logprobs:
            arguments["top_logprobs"] = params.top_logprobs
        if params.max_tokens:
            arguments["max_tokens"] = params.max_tokens
        while True:
            try:
                response = self.client().chat.completions.create(**arguments)
                return self.reply(response)
            except openai.RateLimitError as error:
                limited += 1
                if limited >= self.rate_limit_attempts:
                    return JudgeFailed(f"rate limited {limited} times by {self.fingerprint()}")
                self.sleep(self._wait(error, limited))
            except (openai.APITimeoutError, openai.APIConnectionError, openai.InternalServerError) as error:
                failed += 1
                if failed >= self.error_attempts:
                    return JudgeFailed(f"{type(error).__name__} {failed} times from {self.fingerprint()}: {error}")
                self.sleep(min(self.backoff_cap, self.backoff * 2 ** (failed - 1)))
            except openai.APIError as error:
                return JudgeFailed(f"{type(error).__name__} from {self.fingerprint()}: {error}")
            except (AttributeError, IndexError, TypeError) as error:
                return JudgeFailed(f"malformed reply from {self.fingerprint()}: {error}")

    def _wait(self, error, attempt: int) -> float:
        header = getattr(getattr(error, "response", None), "headers", {}).get("retry-after")
        try:
            wait = float(header) if header is not None else self.backoff * 2 ** (attempt - 1)
        except ValueError:
            wait = self.backoff * 2 ** (attempt - 1)
        return min(self.backoff_cap, max(0.0, wait))

    @staticmethod
    def reply(response) -> JudgeReply:
        choice = response.choices[0]
        content = choice.logprobs.content if choice.logprobs is not None and choice.logprobs.content else []
        tokens = [
            Token(item.token, item.logprob, {alt.token: alt.logprob for alt in item.top_logprobs or []})
            for item in content
        ]
        usage = response.usage
        return JudgeReply(
            choice.message.content or "",
            tokens,
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
            response.model or "",
        )


class LocalVLM(Backend, LazyModel):
    """A transformers image-text-to-text model (LLaVA-1.5, Qwen2-VL …) from the model store,
    generating in batches and reading the same token log-probabilities from its logits."""

    def __init__(self, model: HfModel, *, batch: int = 32, top_logprobs: int = 5):
        """`batch`: requests generated together at first. 32 is ×2–4 faster than 8 for a 7B model on
        an H100 (docs/performance.md); on CUDA out-of-memory the batch is halved and the smaller
        size kept for the rest of the process."""
        self.spec, self.batch, self.top = model, batch, top_logprobs
        self.name = f"transformers:{model.name}"
        self.llava_v1 = model.name in LLAVA_V1_MODELS  # LLaVA's own conversation and padding
        self.device = best_device()
        super().__init__()
        self._processor: ProcessorMixin | None = None

    counting = "exact: the model's own processor and chat template"

    def unavailable_reason(self) -> str | None:
        return None if self.spec.present() else self.spec.missing()

    def processor(self):
        with self._lock:
            if self._processor is None:
                offline()
                from transformers import AutoProcessor

                self._processor = AutoProcessor.from_pretrained(self.spec.folder)
                self._processor.tokenizer.padding_side = "left"
        return self._processor

    def inputs(self, requests: Sequence[JudgeRequest]):
        """The processor's tensors for a batch: the chat template, the pictures, left padding; for
        LLaVA-1.5, its system line and pictures padded to a square (LLAVA_V1_SYSTEM)."""
        from PIL import Image  # here: importing the library must not need Pillow

        processor = self.processor()
        texts, images = [], []
        for request in requests:
            content = [{"type": "text", "text": request.prompt}]
            if request.image is not None:
                content.insert(0, {"type": "image"})
                picture = Image.open(io.BytesIO(request.image)).convert("RGB")
                if self.llava_v1:
                    mean = processor.image_processor.image_mean
                    picture = padded_square(picture, tuple(int(value * 255) for value in mean))
                images.append(picture)
            messages = [{"role": "user", "content": content}]
            if self.llava_v1:
                messages.insert(0, {"role": "system", "content": [{"type": "text", "text": LLAVA_V1_SYSTEM}]})
            texts.append(processor.apply_chat_template(messages, add_generation_prompt=True))
        return processor(images=images or None, text=texts, padding=True, return_tensors="pt")

    def prompt_tokens(self, request: JudgeRequest) -> int:
        return int(self.inputs([request])["attention_mask"][0].sum())

    def fingerprint(self) -> str:
        weights = folder_sha256(self.spec.folder)[:16] if self.spec.present() else "absent"
        return f"{self.name}@{weights}" + ("+llava_v1-conversation-pad" if self.llava_v1 else "")

    def build(self):
        offline()
        import torch
        from transformers import AutoModelForImageTextToText

        dtype = torch.float16 if self.device == "cuda" else torch.float32
        model = AutoModelForImageTextToText.from_pretrained(self.spec.folder, dtype=dtype)
        # transformers wraps PreTrainedModel.to with functools.wraps, which typeshed types unbound
        return model.to(self.device).eval()  # type: ignore[arg-type]

    def _load(self):
        model = super()._load()
        return self.processor(), model

    def _complete(self, requests: Sequence[JudgeRequest], params: JudgeParams) -> list[JudgeReply | JudgeFailed]:
        out: list[JudgeReply | JudgeFailed] = []
        start = 0
        while start < len(requests):
            part = list(requests[start : start + self.batch])
            try:
                out.extend(self._generate(part, params))
            except Exception as error:  # noqa: BLE001 (one bad batch must not stop the job)
                if is_out_of_memory(error) and len(part) > 1:
                    self.batch = max(1, len(part) // 2)  # remembered: the device's size, found once
                    free_cuda_cache()
                    continue
                out.extend(JudgeFailed(f"{self.name} failed: {type(error).__name__}: {error}") for _ in part)
            start += len(part)
        return out

    @in_use
    def _generate(self, requests: list[JudgeRequest], params: JudgeParams) -> list[JudgeReply]:
        import torch

        processor, model = self._load()
        tokenizer = processor.tokenizer
        inputs = self.inputs(requests).to(self.device)
        torch.manual_seed(params.seed)
        sampling = params.temperature > 0
        with torch.no_grad():
            generated = model.generate(
                **inputs,
                do_sample=sampling,
                temperature=params.temperature if sampling else None,
                top_p=params.top_p if sampling else None,
                max_new_tokens=params.max_tokens or 256,
                output_logits=True,
                return_dict_in_generate=True,
                pad_token_id=tokenizer.pad_token_id,
            )
        width = inputs["input_ids"].shape[1]
        stop = {tokenizer.eos_token_id, tokenizer.pad_token_id}
        replies = []
        for row, request in enumerate(requests):
            ids = generated.sequences[row, width:].tolist()
            tokens, watched = [], []
            watch_ids = {text: tokenizer.convert_tokens_to_ids(text) for text in request.watch}
            for step, token_id in enumerate(ids):
                if token_id in stop:
                    break
                logprobs = torch.log_softmax(generated.logits[step][row].float(), dim=-1)
                best = torch.topk(logprobs, min(max(params.top_logprobs or self.top, 1), logprobs.shape[-1]))
                top = {tokenizer.decode([int(i)]): float(v) for v, i in zip(best.values, best.indices, strict=True)}
                tokens.append(Token(tokenizer.decode([token_id]), float(logprobs[token_id]), top))
                watched.append({text: float(logprobs[i]) for text, i in watch_ids.items() if i is not None})
            text = tokenizer.decode(ids[: len(tokens)], skip_special_tokens=True)
            replies.append(
                JudgeReply(text, tokens, int(inputs["attention_mask"][row].sum()), len(tokens), self.spec.name, watched)
            )
        return replies


def picture_size(content: bytes) -> tuple[int, int]:
    from PIL import Image  # here: importing the library must not need Pillow

    with Image.open(io.BytesIO(content)) as image:
        return image.size


def api_backend() -> OpenAICompatible:
    """The configured OpenAI-compatible endpoint (settings come from the environment)."""
    env = config.env
    return OpenAICompatible(
        model=env.judge_model,
        base_url=env.judge_base_url,
        # OPENAI_API_KEY is the openai client's own variable, the fallback.
        api_key=env.judge_api_key or os.environ.get("OPENAI_API_KEY") or None,
        concurrency=env.judge_concurrency,
        timeout=env.judge_timeout,
    )


class Misconfigured(Backend):
    """What a judge is given when its settings name no usable model: unavailable, saying why."""

    def __init__(self, reason: str):
        self.reason = reason
        self.name = "misconfigured"

    def unavailable_reason(self) -> str | None:
        return self.reason

    def fingerprint(self) -> str:
        return f"misconfigured:{self.reason}"


def configured_backend(backend: config.Variable[str], model: config.Variable[str | None], default: HfModel) -> Backend:
    """`backend`=api: the configured endpoint. Otherwise the local vision-language model named by
    `model` (a catalogue name), `default` when unset; one per process."""
    if backend.value() == "api":
        return api_backend()
    name = model.value() or default.name
    entry = CATALOGUE.get(name)
    if not isinstance(entry, HfModel) or not entry.vision_language:
        known = ", ".join(sorted(n for n, e in CATALOGUE.items() if isinstance(e, HfModel) and e.vision_language))
        return Misconfigured(f"{model.name}={name!r} is not a vision-language model of the catalogue (one of: {known})")
    return local_vlm(entry)


@functools.lru_cache(maxsize=2)
def local_vlm(model: HfModel) -> LocalVLM:
    """One loaded model per process (as every other backbone)."""
    return LocalVLM(model)


def is_out_of_memory(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.OutOfMemoryError)


def free_cuda_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
