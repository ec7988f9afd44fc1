"""Where examples come from: svmlight and Vowpal Wabbit files, streams of row chunks, arrays."""

from .hashing import dump_vw, hash_feature, hash_features, iter_vw_chunks, load_vw
from .stream import Chunk, Stream, cache_to_svmlight, write_cache
from .svmlight import dump_svmlight, iter_svmlight_chunks, load_svmlight

__all__ = [
    "Chunk",
    "Stream",
    "cache_to_svmlight",
    "dump_svmlight",
    "dump_vw",
    "hash_feature",
    "hash_features",
    "iter_svmlight_chunks",
    "iter_vw_chunks",
    "load_svmlight",
    "load_vw",
    "write_cache",
]
