"""Models kept on the GPU within a budget, least recently used unloaded first: footprints measured
around each build (faked here: a CPU allocates no GPU memory), nested builds counted once, a model
in use never unloaded, and an unloaded model built again on its next use."""

import threading

import pytest

from capbench_eval.backbones import residency
from capbench_eval.backbones.lazy import LazyModel, in_use
from capbench_eval.backbones.residency import GIB, Residency


class FakeGpu:
    """allocated() as a counter that each build raises by its model's size."""

    def __init__(self) -> None:
        self.bytes = 0


class Sized(LazyModel):
    def __init__(self, gpu: FakeGpu, size_gib: float, inner: "Sized | None" = None):
        super().__init__()
        self.gpu, self.size, self.inner, self.builds = gpu, int(size_gib * GIB), inner, 0

    def build(self):
        self.builds += 1
        if self.inner is not None:
            self.inner._load()  # (Polos builds its CLIP encoder inside its own build)
        self.gpu.bytes += self.size
        return object()

    def unload(self) -> bool:
        unloaded = super().unload()
        if unloaded:
            self.gpu.bytes -= self.size  # its memory is handed back
        return unloaded

    @in_use
    def work(self, started: threading.Event, finish: threading.Event) -> None:
        self._load()
        started.set()
        finish.wait(10)


@pytest.fixture
def gpu(monkeypatch):
    fake = FakeGpu()
    monkeypatch.setattr(residency, "allocated", lambda: fake.bytes)
    monkeypatch.setattr(residency, "RESIDENCY", Residency())
    monkeypatch.setenv("CAPBENCH_GPU_MODEL_MEMORY", "10")
    return fake


def kept(models) -> list[int]:
    return [models.index(model) for model, _ in residency.RESIDENCY.footprints() if model in models]


def test_models_stay_loaded_until_the_budget_needs_their_memory(gpu):
    models = [Sized(gpu, 4), Sized(gpu, 4), Sized(gpu, 4)]
    models[0]._load()
    models[1]._load()
    models[0]._load()  # 0 is now the most recently used
    assert kept(models) == [1, 0]
    assert residency.RESIDENCY.unloaded == 0
    models[2]._load()  # 12 GiB > 10: the least recently used (1) goes
    assert kept(models) == [0, 2]
    assert not models[1].loaded()
    assert models[0].loaded()
    assert residency.RESIDENCY.unloaded == 1
    models[0]._load()
    assert models[0].builds == 1  # kept: not built again
    models[1]._load()  # built again, and now 2 is the least recently used
    assert models[1].builds == 2
    assert kept(models) == [0, 1]
    assert not models[2].loaded()


def test_a_model_in_use_is_never_unloaded(gpu):
    busy, other = Sized(gpu, 6), Sized(gpu, 6)
    started, finish = threading.Event(), threading.Event()
    worker = threading.Thread(target=busy.work, args=(started, finish))  # generating with it
    worker.start()
    try:
        assert started.wait(10)
        other._load()  # over budget, but the only other model is in use
        assert busy.loaded()
        assert other.loaded()
        assert residency.RESIDENCY.unloaded == 0
    finally:
        finish.set()
        worker.join()
    assert busy.unload()
    assert not busy.loaded()  # once free, it can go


def test_a_model_built_inside_another_is_counted_once(gpu):
    clip = Sized(gpu, 3)
    polos = Sized(gpu, 2, inner=clip)
    polos._load()
    sizes = {id(model): size for model, size in residency.RESIDENCY.footprints()}
    assert sizes == {id(clip): 3 * GIB, id(polos): 2 * GIB}


def test_a_nested_build_that_unloads_another_model_leaves_both_footprints_right(gpu):
    big = Sized(gpu, 8)
    big._load()
    clip = Sized(gpu, 3)
    polos = Sized(gpu, 2, inner=clip)
    polos._load()  # building CLIP inside Polos unloads the big one (8 + 3 > 10)
    assert not big.loaded()
    sizes = {id(model): size for model, size in residency.RESIDENCY.footprints()}
    assert sizes == {id(clip): 3 * GIB, id(polos): 2 * GIB}


def test_without_a_budget_nothing_is_unloaded(gpu, monkeypatch):
    monkeypatch.delenv("CAPBENCH_GPU_MODEL_MEMORY")
    monkeypatch.setattr(residency, "budget", lambda: None)  # a CPU: no device to share
    models = [Sized(gpu, 8) for _ in range(3)]
    for model in models:
        model._load()
    assert all(model.loaded() for model in models)
    assert residency.RESIDENCY.unloaded == 0


def test_on_a_cpu_nothing_is_tracked(monkeypatch):
    monkeypatch.setattr(residency, "RESIDENCY", Residency())
    model = Sized(FakeGpu(), 0)
    model._load()
    assert residency.allocated() == 0
    assert residency.RESIDENCY.footprints() == []


def test_models_load_once_when_threads_ask_together(gpu):
    model = Sized(gpu, 1)
    threads = [threading.Thread(target=model._load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.builds == 1
    assert len(residency.RESIDENCY.footprints()) == 1
