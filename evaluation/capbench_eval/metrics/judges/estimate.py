"""What a judge metric would cost on a set of rows, before anything is sent: the requests a run would
make (first draw), how many are already answered in the reply cache, the prompt tokens of the rest
(counted by the backend: exactly with a local model's processor, approximately for an endpoint), the
expected completion tokens, and the price where one is known.

Completion tokens cannot be known before the replies exist: they are the mean observed in earlier
replies of the same metric when the caller has them, else the metric's assumed reply length (both
labelled as such). Redraws after unparseable replies are not counted."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from capbench_eval import config

# OpenAI list prices, USD per million tokens (input, output), as published for these snapshots.
# Any other model (or a changed price) is set with CAPBENCH_JUDGE_PRICE_INPUT / _OUTPUT.
LIST_PRICES = {
    "gpt-4o-2024-05-13": (5.00, 15.00),
    "gpt-4o-2024-08-06": (2.50, 10.00),
    "gpt-4o-2024-11-20": (2.50, 10.00),
    "gpt-4o-mini-2024-07-18": (0.15, 0.60),
}


@dataclass(frozen=True)
class Price:
    input_per_million: float
    output_per_million: float
    basis: str

    def cost(self, prompt_tokens: int, completion_tokens: float) -> float:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


def price_of(model: str | None) -> Price | None:
    """The configured price, else the list price of a known snapshot, else None (a local model, or
    an endpoint model whose price nobody told us)."""
    try:
        per_input, per_output = config.env.judge_price_input, config.env.judge_price_output
    except config.ConfigError:
        given = config.Library.judge_price_input.raw(), config.Library.judge_price_output.raw()
        raise ValueError(
            "CAPBENCH_JUDGE_PRICE_INPUT and _OUTPUT must be numbers (USD per million tokens), "
            f"got {given[0]!r} and {given[1]!r}"
        ) from None
    if per_input is not None and per_output is not None:
        return Price(per_input, per_output, "CAPBENCH_JUDGE_PRICE_INPUT/OUTPUT")
    if model in LIST_PRICES:
        return Price(*LIST_PRICES[model], f"OpenAI list price of {model}")
    return None


@dataclass
class Estimate:
    metric: str
    backend: str
    counting: str  # how prompt tokens were counted
    rows: int
    unjudgeable: int  # rows the metric cannot judge (no image, no references …)
    requests: int  # requests a run sends (first draw, shared ones such as VisCE² contexts included)
    cached: int  # of those, already answered in the reply cache (free)
    images: int  # pictures among the uncached requests
    prompt_tokens: int  # of the uncached requests
    completion_tokens: int  # expected, of the uncached requests
    completion_basis: str
    completion_tokens_max: int | None
    price_basis: str = ""
    cost_usd: float | None = None
    cost_usd_max: float | None = None

    def to_json(self) -> dict:
        return asdict(self)


def image_tokens(width: int, height: int, detail: str) -> int:
    """OpenAI's rule for GPT-4o images: 85 at detail "low"; at "high", scaled (down only) to fit
    2048×2048 and then to a shortest side of 768, 170 per 512-pixel tile plus 85."""
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    fitted_width, fitted_height = width * scale, height * scale
    scale = min(1.0, 768 / min(fitted_width, fitted_height))
    final_width, final_height = fitted_width * scale, fitted_height * scale
    return 85 + 170 * math.ceil(final_width / 512) * math.ceil(final_height / 512)


def text_tokens(text: str) -> int:
    """OpenAI's rule of thumb, about four characters of English per token."""
    return math.ceil(len(text) / 4)
