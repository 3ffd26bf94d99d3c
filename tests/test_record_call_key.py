"""`record.call_key`: the profiler's shortcut for calls it has seen, equal exactly when `record_call` would be."""
from __future__ import annotations

import torch

from predictor_models.aten.record import call_key, record_call

ADDMM = torch.ops.aten.addmm.default
CONV = torch.ops.aten.convolution.default


def _addmm(rows: int, dtype: torch.dtype = torch.float32) -> tuple[tuple, torch.Tensor]:
    bias, a, w = torch.randn(8, dtype=dtype), torch.randn(rows, 4, dtype=dtype), torch.randn(4, 8, dtype=dtype)
    args = (bias, a, w)
    return args, ADDMM(*args)


def test_calls_with_the_same_shapes_share_a_key_and_their_record():
    (first, out1), (second, out2) = _addmm(16), _addmm(16)   # other values, same shapes and dtypes
    assert call_key(ADDMM, first, {}, out1) == call_key(ADDMM, second, {}, out2)
    assert record_call(ADDMM, first, {}, out1) == record_call(ADDMM, second, {}, out2)


def test_a_shape_a_dtype_or_a_scalar_argument_changes_the_key():
    args, out = _addmm(16)
    base = call_key(ADDMM, args, {}, out)
    other_rows, out_rows = _addmm(32)
    half, out_half = _addmm(16, torch.bfloat16)
    assert call_key(ADDMM, other_rows, {}, out_rows) != base
    assert call_key(ADDMM, half, {}, out_half) != base
    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
    keys = {call_key(CONV, (x, w, None, [s, s], [1, 1], [1, 1], False, [0, 0], 1), {}, None) for s in (1, 2)}
    assert len(keys) == 2   # stride 1 and stride 2: two records, two keys


def test_no_key_where_it_could_not_be_trusted():
    args, out = _addmm(16)
    assert call_key(ADDMM, args + ({"unhashable": 1},), {}, out) is None

    class Collective:
        namespace = "c10d"   # a collective's process group: its size is read from the group each time

    assert call_key(Collective(), args, {}, out) is None


def test_a_key_is_one_flat_tuple_and_tells_apart_what_flattening_could_merge():
    x, w = torch.randn(1, 3, 8, 8), torch.randn(4, 3, 3, 3)
    key = call_key(CONV, (x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), {}, CONV(x, w, None, [1, 1], [1, 1],
                                                                                          [1, 1], False, [0, 0], 1))
    # one object for the collector per distinct call: no tuple, list or torch.Size inside
    assert not any(isinstance(atom, (tuple, list)) for atom in key)
    # a tensor's rank and a list's length keep a trailing argument from reading as one more size
    a, b = torch.randn(3, 4), torch.randn(3, 4, 1)
    assert call_key(ADDMM, (a, 1), {}, None) != call_key(ADDMM, (b,), {}, None)
    assert call_key(ADDMM, ([1, 2], 3), {}, None) != call_key(ADDMM, ([1, 2, 3],), {}, None)
    # the prefix (the profiler's layer, phase and optimizer kind) is part of the key
    args, out = _addmm(16)
    assert call_key(ADDMM, args, {}, out, prefix=(1, "fwd", None)) != call_key(ADDMM, args, {}, out, prefix=(2, "fwd", None))


def test_records_made_through_one_shared_dict_share_their_equal_tuples():
    shared: dict = {}
    (first, out1), (second, out2) = _addmm(16), _addmm(16)
    one = record_call(ADDMM, first, {}, out1, shared=shared)
    other = record_call(torch.ops.aten.mm.default, first[1:], {}, torch.mm(*first[1:]), shared=shared)
    assert one == record_call(ADDMM, second, {}, out2)   # sharing changes no record
    assert one.input_shapes[1] is other.input_shapes[0] and one.output_shapes[0] is other.output_shapes[0]
