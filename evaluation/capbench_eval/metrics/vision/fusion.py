"""CAMScore's fusion (metrics.md §11): a small MLP over the sigmoid-squashed level values, trained
by MSE on human scores (rescaled to [0, 1]) with early stopping on the best Kendall τ of a held-out
split. The checkpoint records what it was trained on, so no one scores its training items with it
unknowingly.

torch is imported inside the functions that use it: importing the metrics must not load it (a CPU
web process never needs it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from capbench_eval.files import atomic_path

LEVELS = ("pixel", "semantic", "object", "ciou", "depth")


def fusion_inputs(levels: list[dict]) -> np.ndarray:
    """σ(L) of each level, in LEVELS order, one row per caption."""
    return np.array([[1 / (1 + math.exp(-float(row[name]))) for name in LEVELS] for row in levels], dtype=np.float32)


def fusion_network(hidden: int):
    """Linear → Tanh → Linear → sigmoid, the shape of Polos's regression head, sized for 5 inputs."""
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(len(LEVELS), hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1), torch.nn.Sigmoid()
    )


@dataclass
class TrainingReport:
    epochs: int
    best_epoch: int
    best_tau: float
    history: list[tuple[int, float, float]] = field(default_factory=list)  # (epoch, train MSE, validation τ)


def train_fusion(
    train_x: np.ndarray,
    train_y: np.ndarray,
    val_x: np.ndarray,
    val_y: np.ndarray,
    *,
    hidden: int = 32,
    lr: float = 3e-5,
    batch: int = 64,
    max_epochs: int = 2000,
    patience: int = 100,
    seed: int = 0,
) -> tuple[dict, TrainingReport]:
    """MSE with Adam in mini-batches (the seed's batch 64 and learning rate 3e-5); the weights of the
    epoch with the best validation τ-b are kept, and training stops `patience` epochs after it."""
    import torch
    from scipy.stats import kendalltau  # here: scipy.stats takes a fraction of a second to import, for training only

    if len(train_x) == 0 or len(val_x) < 2:
        raise ValueError(f"need training rows and at least 2 validation rows (got {len(train_x)} and {len(val_x)})")
    torch.manual_seed(seed)
    network = fusion_network(hidden)
    optimiser = torch.optim.Adam(network.parameters(), lr=lr)
    x, y = torch.tensor(train_x), torch.tensor(train_y, dtype=torch.float32)
    held = torch.tensor(val_x)
    order = torch.Generator().manual_seed(seed)
    best = (-math.inf, 0, {k: v.clone() for k, v in network.state_dict().items()})
    report = TrainingReport(0, 0, -math.inf)
    for epoch in range(1, max_epochs + 1):
        network.train()
        losses = []
        for part in torch.randperm(len(x), generator=order).split(batch):
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(network(x[part]).squeeze(1), y[part])
            loss.backward()
            optimiser.step()
            losses.append(float(loss.detach()) * len(part))
        network.eval()
        with torch.no_grad():
            predicted = network(held).squeeze(1).numpy()
        tau = kendalltau(predicted, val_y).statistic
        tau = -1.0 if tau is None or math.isnan(tau) else float(tau)
        report.history.append((epoch, sum(losses) / len(x), tau))
        report.epochs = epoch
        if tau > best[0]:
            best = (tau, epoch, {k: v.clone() for k, v in network.state_dict().items()})
        elif epoch - best[1] >= patience:
            break
    report.best_tau, report.best_epoch = best[0], best[1]
    return best[2], report


class Fusion:
    """A trained fusion loaded from its checkpoint."""

    def __init__(self, state: dict, hidden: int, record: dict):
        import torch

        self.network = fusion_network(hidden)
        self.network.load_state_dict(state)
        self.network.eval()
        self.record = record
        self._torch = torch

    @classmethod
    def load(cls, path) -> Fusion:
        import torch

        saved = torch.load(path, map_location="cpu", weights_only=True)
        return cls(saved["state_dict"], int(saved["hidden"]), saved["record"])

    def __call__(self, levels: list[dict]) -> list[float]:
        if not levels:
            return []
        with self._torch.no_grad():
            return [float(v) for v in self.network(self._torch.tensor(fusion_inputs(levels))).squeeze(1)]


def save_fusion(path, state: dict, hidden: int, record: dict) -> None:
    import torch

    with atomic_path(path) as partial:
        torch.save({"state_dict": state, "hidden": hidden, "record": record}, partial)
