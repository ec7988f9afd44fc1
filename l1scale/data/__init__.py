"""Where examples come from: svmlight files, streams of row chunks, arrays."""

from .stream import Chunk, Stream, cache_to_svmlight, write_cache
from .svmlight import dump_svmlight, iter_svmlight_chunks, load_svmlight

__all__ = [
    "Chunk",
    "Stream",
    "cache_to_svmlight",
    "dump_svmlight",
    "iter_svmlight_chunks",
    "load_svmlight",
    "write_cache",
]
