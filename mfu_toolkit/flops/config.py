"""Load a user's model configuration from a TOML file.

The file holds one ``[model]`` table whose ``kind`` picks the estimator and whose other keys are
the fields of that kind's config class::

    [model]
    kind = "transformer"        # transformer | dlrm | dcnv2 | hstu | mlp
    name = "my-7b"
    n_layers = 32
    d_model = 4096
    n_heads = 32
    ffn_type = "swiglu"
    d_ff = 11008
    vocab_size = 32000

Any model may list custom blocks as ``[[model.extra_blocks]]`` tables with ``name``,
``forward_flops`` (per token for transformers, per sample otherwise) and optionally ``params``,
``attention`` and ``output_layer``. A transformer's ``attention_window`` is an integer or an
array (``[4096, 0]``: local and global layers alternating). ``kind = "dcnv2"`` is a DLRM whose
interaction defaults to DCNv2 cross layers. Unknown or missing keys raise ``ConfigFileError``
naming the file, the key and the keys expected.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

from .recsys import DLRMConfig, HSTUConfig, MLPConfig
from .transformer import Component, FlopsConfigError, TransformerConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["KINDS", "ConfigFileError", "load_model_config", "config_from_dict"]

KINDS: dict[str, type] = {
    "transformer": TransformerConfig,
    "dlrm": DLRMConfig,
    "dcnv2": DLRMConfig,
    "hstu": HSTUConfig,
    "mlp": MLPConfig,
}

_BLOCK_KEYS = ("name", "forward_flops", "params", "attention", "note", "output_layer")


class ConfigFileError(FlopsConfigError):
    """A model config file that cannot be used; names the file, the key and what was expected."""

    def __init__(self, path: str, key: str | None, message: str) -> None:
        self.path = path
        self.key = key
        where = f"{path}: " + (f"key {key!r}: " if key else "")
        super().__init__(where + message)


def _fields(cls: type) -> tuple[list[str], list[str]]:
    """(required, optional) init field names of a config dataclass."""
    required, optional = [], []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        (required if no_default else optional).append(f.name)
    return required, optional


def _blocks(path: str, value: Any) -> tuple[Component, ...]:
    if not isinstance(value, list):
        raise ConfigFileError(
            path, "extra_blocks", "must be an array of tables ([[model.extra_blocks]])"
        )
    blocks = []
    for i, item in enumerate(value):
        key = f"extra_blocks[{i}]"
        if not isinstance(item, dict):
            raise ConfigFileError(path, key, "must be a table with name and forward_flops")
        unknown = sorted(set(item) - set(_BLOCK_KEYS))
        if unknown:
            raise ConfigFileError(
                path, f"{key}.{unknown[0]}", f"unknown key; expected keys: {', '.join(_BLOCK_KEYS)}"
            )
        for req in ("name", "forward_flops"):
            if req not in item:
                raise ConfigFileError(path, f"{key}.{req}", "missing required key")
        try:
            blocks.append(Component(**item))
        except (TypeError, ValueError) as exc:
            raise ConfigFileError(path, key, str(exc)) from None
    return tuple(blocks)


def config_from_dict(model: dict[str, Any], *, path: str = "<dict>"):
    """Build a validated config object from the ``[model]`` table of a config file."""
    if "kind" not in model:
        raise ConfigFileError(path, "kind", f"missing required key; one of {', '.join(KINDS)}")
    kind = model["kind"]
    if kind not in KINDS:
        raise ConfigFileError(path, "kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")
    cls = KINDS[kind]
    required, optional = _fields(cls)
    values = {k: v for k, v in model.items() if k != "kind"}
    expected = ", ".join(["kind", *required, *optional])
    for key in values:
        if key not in required and key not in optional:
            raise ConfigFileError(
                path, key, f"unknown key for kind {kind!r}; expected keys: {expected}"
            )
    missing = [k for k in required if k not in values]
    if missing:
        raise ConfigFileError(
            path, missing[0], f"missing required key for kind {kind!r}; expected keys: {expected}"
        )
    if kind == "dcnv2":
        values.setdefault("interaction", "dcnv2")
    if "extra_blocks" in values:
        values["extra_blocks"] = _blocks(path, values["extra_blocks"])
    values.setdefault("name", os.path.splitext(os.path.basename(path))[0] or kind)
    try:
        return cls(**values)
    except FlopsConfigError as exc:
        key = str(exc).split(" ", 1)[0].split("[", 1)[0]
        raise ConfigFileError(path, key if key in values else None, str(exc)) from None


def load_model_config(path: str | os.PathLike[str]):
    """Read a TOML model config and return the validated config object it describes.

    Returns a ``TransformerConfig``, ``DLRMConfig``, ``HSTUConfig`` or ``MLPConfig``.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigFileError(path, None, "no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(path, None, f"not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"model"})
    if unknown:
        raise ConfigFileError(
            path, unknown[0], "unknown table or key; expected only a [model] table"
        )
    if "model" not in data or not isinstance(data["model"], dict):
        raise ConfigFileError(path, "model", "missing [model] table (with kind = ...)")
    return config_from_dict(data["model"], path=path)
