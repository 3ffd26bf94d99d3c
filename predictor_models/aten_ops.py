"""The public names of `predictor_models.aten` in one place, for code written against them.

Captured aten calls go `record` -> `OpCall` (`call`) -> `costs` -> `OpSpec`, classified by
`taxonomy`; see `predictor_models.aten` for which module does what.
"""
from predictor_models.aten.call import OpCall
from predictor_models.aten.costs import describe_aten_op, op_spec_from_call
from predictor_models.aten.record import record_call
from predictor_models.aten.taxonomy import FREE_OPS, classify, is_free_op, op_base_name
from predictor_models.aten.unmodelled import UnmodelledCalls

__all__ = ["OpCall", "record_call", "classify", "is_free_op", "op_base_name", "FREE_OPS",
           "op_spec_from_call", "describe_aten_op", "UnmodelledCalls"]
