"""Where examples come from: svmlight and Vowpal Wabbit files, streams of row chunks, arrays,
DNA sequences, and generated feature spaces."""

from .feature_spaces import DNAPatterns, FeatureSpace, Products, RandomFourier
from .sequences import (
    decode_sequences,
    dump_sequences,
    encode_sequences,
    load_sequences,
    make_splice_sites,
    splice_sequences,
)
from .stream import Chunk, Stream, cache_to_svmlight, write_cache
from .svmlight import dump_svmlight, iter_svmlight_chunks, load_svmlight
from .vw import dump_vw, hash_feature, hash_features, iter_vw_chunks, load_vw

__all__ = [
    "Chunk",
    "DNAPatterns",
    "FeatureSpace",
    "Products",
    "RandomFourier",
    "Stream",
    "cache_to_svmlight",
    "decode_sequences",
    "dump_sequences",
    "dump_svmlight",
    "dump_vw",
    "encode_sequences",
    "hash_feature",
    "hash_features",
    "iter_svmlight_chunks",
    "iter_vw_chunks",
    "load_sequences",
    "load_svmlight",
    "load_vw",
    "make_splice_sites",
    "splice_sequences",
    "write_cache",
]
