"""Deletion vectors: which rows of a data file a table version no longer holds.

A ``deletionVector`` descriptor on an ``add`` (or ``remove``) action says the listed
row indexes of that file are deleted (protocol "Deletion Vectors"). This module turns
a descriptor into a sorted ``numpy.uint64`` array of those indexes, and is the one
place that knows the format:

* where the bytes are: ``i`` -- inline in the log, Z85 text; ``u`` -- a file
  ``<prefix>/deletion_vector_<uuid>.bin`` under the table root, the UUID Z85-encoded
  in the last 20 characters of ``pathOrInlineDv``; ``p`` -- an absolute path or URI;
* how a DV file is laid out: one format-version byte (1), then at ``offset`` a
  4-byte big-endian size, that many bytes of bitmap, and a big-endian CRC-32 of them;
* how the bitmap is encoded: a RoaringBitmapArray (little-endian magic 1681511377,
  an int64 count of 32-bit buckets, each an int32 high key followed by a standard
  portable 32-bit Roaring bitmap with array, bitset and run containers).

Everything is checked -- format version, size, checksum, magic number, cardinality --
because a wrong DV silently resurrects or hides rows; a mismatch is a
:class:`DeletionVectorError` naming the table and the DV file. Decoding works on
whole containers with numpy, never on one row at a time.
"""
from __future__ import annotations

import struct
import uuid
import zlib
from typing import Any
from urllib.parse import unquote

import numpy as np

from .data_paths import is_uri, read_path_bytes
from ..base.errors import DeletionVectorError
from ..base.storage import Storage

#: The RoaringBitmapArray magic number (portable 64-bit format), little-endian on disk.
RBA_MAGIC = 1681511377
#: The only DV file format version the protocol defines.
DV_FILE_FORMAT_VERSION = 1
#: Length of a Z85-encoded UUID at the end of a ``u`` descriptor's ``pathOrInlineDv``.
_UUID_Z85_LEN = 20
#: Portable Roaring cookies (RoaringFormatSpec).
_COOKIE_NO_RUNS = 12346
_COOKIE_RUNS = 12347
#: With run containers, the offset header is present only from this many containers on.
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX_CARDINALITY = 4096
_BITSET_BYTES = 8192

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = np.full(256, -1, dtype=np.int64)
_Z85_VALUE[np.frombuffer(_Z85.encode(), dtype=np.uint8)] = np.arange(85)
_Z85_WEIGHTS = 85 ** np.arange(4, -1, -1, dtype=np.uint64)


def z85_decode(text: str) -> bytes:
    """Decode Z85 (ZeroMQ RFC 32): every 5 characters are 4 big-endian bytes.

    Delta Spark pads the input to whole 4-byte groups (``sizeInBytes`` trims the
    padding again). The Rust ``z85`` crate, used by delta-kernel-rs writers, instead
    ends with a short group: ``k`` leading ``#`` then the last ``4 - k`` bytes in
    ``5 - k`` characters. No standard group starts with ``#`` (84 * 85**4 > 2**32),
    so the two never clash.
    """
    raw = text.encode("ascii", errors="replace")
    if len(raw) % 5:
        raise ValueError(f"Z85 text length {len(raw)} is not a multiple of 5")
    tail = b""
    if raw[-5:].startswith(b"#"):
        pad = len(raw[-5:]) - len(raw[-5:].lstrip(b"#"))
        if pad > 3:
            raise ValueError("Z85 text ends in a group of padding only")
        (value,) = _z85_words(raw[-5 + pad:].rjust(5, b"0"))
        if value >= 1 << (8 * (4 - pad)):
            raise ValueError("Z85 short group exceeds its byte count")
        tail = int(value).to_bytes(4 - pad, "big")
        raw = raw[:-5]
    return _z85_words(raw).astype(">u4").tobytes() + tail


def _z85_words(raw: bytes) -> np.ndarray:
    digits = _Z85_VALUE[np.frombuffer(raw, dtype=np.uint8)]
    if (digits < 0).any():
        bad = chr(raw[int(np.argmax(digits < 0))])
        raise ValueError(f"invalid Z85 character {bad!r}")
    words = (digits.reshape(-1, 5).astype(np.uint64) * _Z85_WEIGHTS).sum(axis=1)
    if (words > 0xFFFFFFFF).any():
        raise ValueError("a Z85 group exceeds 32 bits")
    return words


def dv_file_path(descriptor: dict[str, Any]) -> str | None:
    """Where a ``u`` or ``p`` descriptor's DV file is (table-relative for ``u``); None for inline.

    A ``p`` descriptor holds an absolute path in URI form, URL-encoded as Delta Spark writes it
    (shallow clones: ``file:/data/my%20table/deletion_vector_....bin``): decoded here.
    """
    storage_type = descriptor.get("storageType")
    value = descriptor.get("pathOrInlineDv") or ""
    if storage_type == "p":
        return unquote(value)           # an absolute URI, percent-encoded like every log path
    if storage_type != "u":
        return None
    if len(value) < _UUID_Z85_LEN:
        raise ValueError(f"'u' deletion vector reference {value!r} is shorter than a Z85 UUID")
    prefix, encoded = value[:-_UUID_Z85_LEN], value[-_UUID_Z85_LEN:]
    name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
    return f"{prefix}/{name}" if prefix else name


def read_deletion_vector(storage: Storage, dv: dict[str, Any],
                         cache: dict[str, bytes] | None = None) -> np.ndarray:
    """The deleted row indexes of descriptor ``dv``: a sorted, unique ``numpy.uint64`` array.

    ``cache`` (path -> file bytes), shared across calls of one read, makes many
    DVs stored in one file cost one read of it. A descriptor that cannot be
    decoded, or disagrees with its bytes, is a :class:`DeletionVectorError`.
    """
    where = f"{storage.uri}: deletion vector"
    try:
        storage_type = dv["storageType"]
        size = int(dv["sizeInBytes"])
        cardinality = int(dv["cardinality"])
    except (KeyError, TypeError, ValueError) as e:
        raise DeletionVectorError(f"{where} descriptor {dv!r:.300} lacks a valid {e}") from None
    path = None
    try:
        if storage_type == "i":
            source = "inline in the log"
            data = _inline_bytes(dv.get("pathOrInlineDv") or "", size, where)
        elif storage_type in ("u", "p"):
            try:
                path = dv_file_path(dv)
            except ValueError as e:
                raise DeletionVectorError(f"{where} {dv.get('pathOrInlineDv')!r}: {e}") from None
            source = f"file {path}"
            data = _framed(_file_bytes(storage, path, cache, where), int(dv.get("offset") or 0), size,
                           f"{where} {source}")
        else:
            raise DeletionVectorError(f"{where} has unknown storageType {storage_type!r} (expected i, u or p)")
        rows = decode_bitmap_array(data, f"{where} {source}")
        if len(rows) != cardinality:
            raise DeletionVectorError(f"{where} {source} holds {len(rows)} row indexes but its descriptor "
                                      f"says cardinality={cardinality}")
    except DeletionVectorError as e:
        e.path = e.path or path
        raise
    return rows


def _inline_bytes(text: str, size: int, where: str) -> bytes:
    """The bitmap bytes of an inline DV (Z85 pads to whole 4-byte groups; ``sizeInBytes`` trims)."""
    try:
        data = z85_decode(text)[:size]
    except ValueError as e:
        raise DeletionVectorError(f"{where} stored inline is not valid Z85: {e}") from None
    if len(data) != size:
        raise DeletionVectorError(f"{where} stored inline holds {len(data)} bytes, not sizeInBytes={size}")
    return data


def _file_bytes(storage: Storage, path: str, cache: dict[str, bytes] | None, where: str) -> bytes:
    if cache is not None and path in cache:
        return cache[path]
    try:
        data = read_path_bytes(storage, path)
    except FileNotFoundError:
        shown = path if is_uri(path) else storage.full_uri(path)
        raise DeletionVectorError(f"{where} file {shown} does not exist (deleted by hand, or vacuumed "
                                  "with too short a retention?)", path=path) from None
    if cache is not None:
        cache[path] = data
    return data


def _framed(data: bytes, offset: int, size: int, where: str) -> bytes:
    """The bitmap bytes of one DV in a DV file, with the file's frame checked."""
    if not data or data[0] != DV_FILE_FORMAT_VERSION:
        found = data[0] if data else "nothing"
        raise DeletionVectorError(f"{where}: format version byte is {found}, expected {DV_FILE_FORMAT_VERSION}")
    if offset < 1 or offset + 4 + size + 4 > len(data):
        raise DeletionVectorError(f"{where}: offset {offset} and sizeInBytes {size} reach past the end of "
                                  f"the {len(data)}-byte file")
    (stored_size,) = struct.unpack_from(">i", data, offset)
    if stored_size != size:
        raise DeletionVectorError(f"{where}: the file says the DV at offset {offset} has {stored_size} bytes, "
                                  f"the descriptor says {size}")
    start = offset + 4
    body = data[start:start + size]
    (checksum,) = struct.unpack_from(">I", data, start + size)
    if zlib.crc32(body) != checksum:
        raise DeletionVectorError(f"{where}: CRC-32 checksum mismatch for the DV at offset {offset}")
    return body


def decode_bitmap_array(data: bytes, where: str = "deletion vector") -> np.ndarray:
    """Decode a serialized RoaringBitmapArray (magic number first) into sorted uint64 row indexes."""
    reader = _Reader(data, where)
    magic = reader.unpack("<I")
    if magic != RBA_MAGIC:
        raise DeletionVectorError(f"{where}: magic number {magic} is not a RoaringBitmapArray's ({RBA_MAGIC})")
    buckets = reader.unpack("<q")
    if buckets < 0 or buckets > len(data):
        raise DeletionVectorError(f"{where}: bucket count {buckets} is impossible")
    parts = []
    last_key = -1
    for _ in range(buckets):
        key = reader.unpack("<I")
        if key <= last_key:
            raise DeletionVectorError(f"{where}: bucket keys are not increasing ({last_key}, then {key})")
        last_key = key
        low = _read_roaring32(reader)
        parts.append((np.uint64(key) << np.uint64(32)) | low.astype(np.uint64))
    if reader.pos != len(data):
        raise DeletionVectorError(f"{where}: {len(data) - reader.pos} bytes follow the bitmap")
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


class _Reader:
    """A cursor over bytes whose every read checks the bounds (a short DV is corrupt, not an IndexError)."""

    def __init__(self, data: bytes, where: str):
        self.data, self.where, self.pos = data, where, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DeletionVectorError(f"{self.where}: the bitmap ends early (needs {n} bytes at {self.pos}, "
                                      f"has {len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> int:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def array(self, dtype: str, count: int) -> np.ndarray:
        return np.frombuffer(self.take(np.dtype(dtype).itemsize * count), dtype=dtype)


def _read_roaring32(reader: _Reader) -> np.ndarray:
    """One portable 32-bit Roaring bitmap (RoaringFormatSpec) as sorted uint32 values."""
    cookie = reader.unpack("<I")
    if cookie & 0xFFFF == _COOKIE_RUNS:
        n = (cookie >> 16) + 1
        run_flags = np.unpackbits(reader.array("u1", (n + 7) // 8), bitorder="little")[:n].astype(bool)
        has_offsets = n >= _NO_OFFSET_THRESHOLD
    elif cookie == _COOKIE_NO_RUNS:
        n = reader.unpack("<I")
        if n > 65536:
            raise DeletionVectorError(f"{reader.where}: {n} containers in one 32-bit bitmap (at most 65536)")
        run_flags = np.zeros(n, dtype=bool)
        has_offsets = True
    else:
        raise DeletionVectorError(f"{reader.where}: unknown Roaring cookie {cookie:#x}")
    header = reader.array("<u2", 2 * n).reshape(n, 2).astype(np.uint32)
    keys, cards = header[:, 0], header[:, 1] + 1
    if n > 1 and (np.diff(keys.astype(np.int64)) <= 0).any():
        raise DeletionVectorError(f"{reader.where}: container keys are not increasing")
    if has_offsets:
        reader.take(4 * n)  # byte offsets of the containers; they follow one another anyway
    values = []
    for key, card, is_run in zip(keys.tolist(), cards.tolist(), run_flags.tolist()):
        if is_run:
            runs = reader.unpack("<H")
            pairs = reader.array("<u2", 2 * runs).reshape(runs, 2).astype(np.uint32)
            lengths = pairs[:, 1] + 1
            low = np.repeat(pairs[:, 0], lengths) + _ranks_within(lengths)
        elif card <= _ARRAY_MAX_CARDINALITY:
            low = reader.array("<u2", card).astype(np.uint32)
        else:
            bits = np.unpackbits(reader.array("u1", _BITSET_BYTES), bitorder="little")
            low = np.flatnonzero(bits).astype(np.uint32)
        if len(low) != card or (len(low) > 1 and (np.diff(low.astype(np.int64)) <= 0).any()) \
                or (len(low) and low[-1] > 0xFFFF):
            raise DeletionVectorError(f"{reader.where}: container {key} does not hold {card} increasing values")
        values.append((np.uint32(key) << np.uint32(16)) | low)
    return np.concatenate(values) if values else np.empty(0, dtype=np.uint32)


def _ranks_within(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., len-1 for each run length, concatenated (no Python loop over values)."""
    total = int(lengths.sum())
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return (np.arange(total, dtype=np.uint32) - starts).astype(np.uint32)


def deleted_mask(num_rows: int, deleted: np.ndarray, where: str) -> np.ndarray:
    """A boolean keep-mask of ``num_rows`` rows with the ``deleted`` indexes False."""
    if len(deleted) and int(deleted[-1]) >= num_rows:
        raise DeletionVectorError(f"{where}: deletes row {int(deleted[-1])} of a file with {num_rows} rows")
    keep = np.ones(num_rows, dtype=bool)
    keep[deleted.astype(np.int64)] = False
    return keep

