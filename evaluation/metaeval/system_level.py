"""System-level agreement: rank captioning systems by their mean human and mean metric scores.
Only meaningful where real systems exist (THumB: 5 systems, so mark the small n)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass(frozen=True)
class SystemLevel:
    systems: list[str]
    human: np.ndarray
    metric: np.ndarray

    def correlation(self, statistic: Callable[[np.ndarray, np.ndarray], float]) -> float:
        return statistic(self.human, self.metric)

    def pairwise_agreement(self) -> float:
        """Fraction of system pairs ordered alike (Kocmi et al. 2021); a tie with a tie agrees."""
        pairs = list(combinations(range(len(self.systems)), 2))
        if not pairs:
            return float("nan")
        agree = sum(np.sign(self.human[i] - self.human[j]) == np.sign(self.metric[i] - self.metric[j])
                    for i, j in pairs)
        return agree / len(pairs)


def system_means(human: Sequence[float], metric: Sequence[float], systems: Sequence[str]) -> SystemLevel:
    human, metric, systems = np.asarray(human, float), np.asarray(metric, float), np.asarray(systems)
    names = sorted(set(systems.tolist()))
    return SystemLevel(names, np.array([human[systems == s].mean() for s in names]),
                       np.array([metric[systems == s].mean() for s in names]))
