"""``records.Record``, the base of the read path's value classes, behaves as the dataclass
it replaced did: construction, defaults, equality, hashing, immutability, copy, pickle."""
from __future__ import annotations

import copy
import pickle

import pytest

from airflow_provider_delta.log.base.actions import Metadata, Protocol
from airflow_provider_delta.log.read.listing import LogListing
from airflow_provider_delta.log.base.records import FrozenRecordError, Record


class Point(Record):
    __slots__ = ("x", "y", "tags")
    _defaults = {"y": 0}
    _factories = {"tags": list}
    _frozen = True


class Counter(Record):
    __slots__ = ("n",)


def test_positional_keyword_and_default_construction():
    assert (Point(1).x, Point(1).y, Point(1).tags) == (1, 0, [])
    assert Point(1, 2, ["a"]) == Point(x=1, tags=["a"], y=2)
    assert Point(1).tags is not Point(1).tags            # a factory's default is fresh per instance


@pytest.mark.parametrize("make, message", [
    (lambda: Point(), "missing required argument 'x'"),
    (lambda: Point(1, 2, [], 4), "takes 3 arguments but 4 were given"),
    (lambda: Point(1, x=2), "multiple values for argument 'x'"),
    (lambda: Point(1, z=2), "unexpected keyword arguments ['z']"),
])
def test_bad_arguments_are_type_errors(make, message):
    with pytest.raises(TypeError) as e:
        make()
    assert message in str(e.value)


def test_equality_is_by_class_and_fields():
    assert Point(1, 2) == Point(1, 2)
    assert Point(1, 2) != Point(1, 3)
    assert Counter(1) != Point(1)                        # another class, same values
    assert Point(1, 2).__eq__((1, 2, [])) is NotImplemented


def test_frozen_records_refuse_assignment_and_hash_by_value():
    p = Protocol(1, 2)
    with pytest.raises(FrozenRecordError):
        p.min_reader_version = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):                  # the dataclass-compatible base class
        del p.min_writer_version
    assert p.min_reader_version == 1
    assert hash(Protocol(1, 2, ("a",))) == hash(Protocol(1, 2, ("a",)))
    assert len({Protocol(1, 2), Protocol(1, 2), Protocol(3, 7)}) == 2


def test_mutable_records_accept_assignment_and_are_unhashable():
    c = Counter(1)
    c.n = 2
    assert c == Counter(2)
    with pytest.raises(TypeError, match="unhashable"):
        hash(c)
    with pytest.raises(AttributeError):                  # slots: no field that was not declared
        c.other = 1  # type: ignore[attr-defined]


def test_repr_names_the_fields():
    assert repr(Point(1, tags=["t"])) == "Point(x=1, y=0, tags=['t'])"
    assert repr(Protocol(3, 7, ("deletionVectors",), None)) == \
        "Protocol(min_reader_version=3, min_writer_version=7, reader_features=('deletionVectors',), writer_features=None)"


def test_copy_and_pickle_round_trip():
    md = Metadata("id-1", '{"type":"struct","fields":[]}', ("p",), {"delta.appendOnly": "true"}, name="t")
    for clone in (copy.copy(md), copy.deepcopy(md), pickle.loads(pickle.dumps(md))):
        assert clone == md and type(clone) is Metadata
    listing = LogListing(log_dir_exists=False)
    listing.partial_from = 5
    assert pickle.loads(pickle.dumps(listing)) == listing


def test_metadata_and_protocol_json_round_trip_unchanged():
    md = Metadata.from_json({"id": "x", "schemaString": "{}", "partitionColumns": ["a"],
                             "configuration": {"k": 1, "n": None}, "format": {"provider": "parquet"}})
    assert (md.partition_columns, md.configuration, md.format_options, md.created_time) == (("a",), {"k": "1"}, {}, None)
    assert Metadata.from_json(md.to_json()) == md
    assert Protocol.from_json(Protocol(3, 7, ("x",), ("y",)).to_json()) == Protocol(3, 7, ("x",), ("y",))
