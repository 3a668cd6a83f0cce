"""Moved: :func:`apply_inputs` to :mod:`mfu_toolkit.inputs`, the spellings and phrasing to
:mod:`mfu_toolkit.render.vocabulary`. The old names work for one release, with a warning."""

from ..deprecation import moved

_HOMES = {name: "mfu_toolkit.render.vocabulary" for name in (
    "INTERFACES", "ask", "input_name", "check_value", "parse_value", "flops_request", "phrase", "phrase_error")}
__getattr__ = moved(__name__, {**_HOMES, "apply_inputs": "mfu_toolkit.inputs", "InputError": "mfu_toolkit.facts",
                               "preset_family": "mfu_toolkit.flops"})
