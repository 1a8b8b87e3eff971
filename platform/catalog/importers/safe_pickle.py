"""Reading a pickled numpy array without running code from the file.

`pickle.load` calls whatever callable the file names, so a data file could run anything. This
unpickler resolves only the names a pickled numpy array (of numbers, strings or Python objects)
needs, each mapped to a CapBench function that checks its arguments; any other name is refused
before it is looked up. Python containers and strings need no names."""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from catalog.importers.errors import ImportFormatError

MAX_BYTES = 2 * 1024**3


class _ArrayType:
    __slots__ = ()  # a pickle's BUILD can set no attribute on the shared placeholder
    """Stands for `numpy.ndarray` in a pickle: an argument of `_reconstruct`, never callable."""


_ARRAY_TYPE = _ArrayType()


def _reconstruct(subtype: Any, shape: Any, typecode: Any) -> np.ndarray:
    """numpy's `_reconstruct`: an empty array that the pickle's state then fills."""
    if subtype is not _ARRAY_TYPE:
        raise pickle.UnpicklingError("only plain numpy arrays are allowed")
    return np.ndarray(shape, dtype=typecode)


def _frombuffer(buffer: Any, dtype: Any, shape: Any, order: Any) -> np.ndarray:
    """numpy's `_frombuffer` (protocol 5): an array of numbers or fixed-width strings from bytes."""
    array = np.frombuffer(buffer, dtype=np.dtype(dtype))
    if order == "F":
        return array.reshape(tuple(shape)[::-1]).T
    return array.reshape(shape)


def _scalar(dtype: Any, data: Any = None) -> Any:
    """numpy's `scalar`: one number or string from its bytes (never an object scalar)."""
    dtype = np.dtype(dtype)
    if dtype.hasobject or not isinstance(data, bytes):
        raise pickle.UnpicklingError("only numeric or string numpy scalars are allowed")
    return np.frombuffer(data, dtype=dtype)[0]


def _latin1_encode(text: Any, encoding: Any = "utf-8") -> bytes:
    """`_codecs.encode`, which protocol-2 pickles use to write bytes; only latin-1 is allowed."""
    if not isinstance(text, str) or encoding != "latin1":
        raise pickle.UnpicklingError("only latin-1 byte strings are allowed")
    return text.encode("latin1")


ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy", "ndarray"): _ARRAY_TYPE,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1_encode,
    **{(module, "_reconstruct"): _reconstruct for module in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(module, "scalar"): _scalar for module in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(module, "_frombuffer"): _frombuffer for module in ("numpy.core.numeric", "numpy._core.numeric")},
}


class ArrayUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refused {module}.{name}: not part of a numpy array") from None

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused a persistent reference")


def load_array(path: Path) -> Any:
    """The array (or plain Python data) a pickle file holds, or a located error saying why not."""
    if path.stat().st_size > MAX_BYTES:
        raise ImportFormatError(path, None, None, f"larger than {MAX_BYTES // 1024**3} GiB")
    try:
        return ArrayUnpickler(io.BytesIO(path.read_bytes())).load()
    except pickle.UnpicklingError as error:
        raise ImportFormatError(
            path, None, None, f"refused: {error} (CapBench never runs code from a data file)"
        ) from None
    except Exception as error:  # a malformed pickle raises almost anything
        raise ImportFormatError(path, None, None, f"not a readable pickle: {type(error).__name__}: {error}") from None
