"""Encoding deletion vectors for tests: Z85, portable 32-bit Roaring bitmaps, RoaringBitmapArray.

The package only decodes them (a writer of deletion vectors is Delta Spark's job); tests
build descriptors and DV files with these.
"""
from __future__ import annotations

import struct

import numpy as np

from airflow_provider_delta.log.read.deletion_vectors import RBA_MAGIC


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_encode(data: bytes) -> str:
    padded = data + b"\0" * (-len(data) % 4)
    out = []
    for (word,) in struct.iter_unpack(">I", padded):
        chars = []
        for _ in range(5):
            word, r = divmod(word, 85)
            chars.append(_Z85[r])
        out.append("".join(reversed(chars)))
    return "".join(out)


def roaring32(values: list[int], runs: bool = False) -> bytes:
    """Portable 32-bit Roaring: array containers up to 4096 values, bitsets above, or run containers."""
    by_key: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(by_key)
    n = len(keys)
    bodies = []
    for k in keys:
        lows = by_key[k]
        if runs:
            pairs, start, prev = [], lows[0], lows[0]
            for x in lows[1:] + [None]:
                if x is not None and x == prev + 1:
                    prev = x
                    continue
                pairs.append((start, prev - start))
                if x is not None:
                    start = prev = x
            bodies.append(struct.pack("<H", len(pairs)) + b"".join(struct.pack("<HH", *p) for p in pairs))
        elif len(lows) <= 4096:
            bodies.append(struct.pack(f"<{len(lows)}H", *lows))
        else:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[lows] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
    header = b"".join(struct.pack("<HH", k, len(by_key[k]) - 1) for k in keys)
    if runs:
        cookie = struct.pack("<I", 12347 | ((n - 1) << 16))
        flags = np.packbits(np.ones(n, dtype=np.uint8), bitorder="little").tobytes()
        out = cookie + flags + header
        start = len(out) + (4 * n if n >= 4 else 0)
    else:
        out = struct.pack("<II", 12346, n) + header
        start = len(out) + 4 * n
    if runs is False or n >= 4:
        offsets = []
        for b in bodies:
            offsets.append(start)
            start += len(b)
        out += struct.pack(f"<{n}I", *offsets)
    return out + b"".join(bodies)


def bitmap_array(values: list[int], runs: bool = False) -> bytes:
    buckets: dict[int, list[int]] = {}
    for v in values:
        buckets.setdefault(v >> 32, []).append(v & 0xFFFFFFFF)
    out = struct.pack("<Iq", RBA_MAGIC, len(buckets))
    for key in sorted(buckets):
        out += struct.pack("<I", key) + roaring32(buckets[key], runs)
    return out
