"""Peak-FLOPs registry: vendor datasheet peaks per accelerator and dtype, each with its source.

MFU divides achieved model FLOP/s by a peak, so a wrong peak silently makes every MFU wrong.
This registry therefore follows a few rules (the numbers live in ``accelerators.csv``):

1. Every value carries its basis (form factor, power, clock), a source URL and the date it was
   read. A row without a source URL or date is refused at load time, naming file, line and field.
2. Peaks are dense. Vendors print 2:4 sparse figures with an asterisk (from Hopper on, the TF32,
   BF16, FP16 and FP8 headline numbers are the sparse ones); the dense column holds half of that,
   the sparse column the printed figure. Sparse peaks are returned only for ``sparse=True``. The
   sparse column is for 2:4 structured sparsity only: another scheme's "sparse" figure (AWS's M:N
   up-to-4x Trainium figures) stays out of it and is described in the note, which ``sparse=True``
   then gives as the reason for refusing.
3. Peaks are those of the matrix engines, because MFU counts matmul FLOPs. Where a vendor prints
   both a chip total over all engines and a matrix-engine figure, the matrix-engine one is stored:
   Trainium rows hold NeuronCores x the Tensor Engine peak AWS prints per NeuronCore (Trainium2
   bf16: 8 x 79 = 632, not the 667 chip total), Gaudi rows the MME peak. GeForce cards run FP16/BF16
   with FP32 accumulate (what training uses) at half the FP16-accumulate rate; their rows hold the
   FP32-accumulate figures.
4. int8 is in TOPS, every other dtype in TFLOP/s (see the ``unit`` column and ``Peak.unit``).
5. Values are per *package* as the vendor prints them. ``devices_per_package`` says how many
   framework devices one package shows (MI250X: 2 GCDs; TPU v2/v3/TPU7x: 2 TensorCores; Trainium2
   at LNC=2: 4), and ``per="device"`` divides by it. GB200/GB300 rows are per GPU: "GB200" means
   one Blackwell GPU in a GB200 NVL system, not the two-GPU superchip.
6. Lookup is case-insensitive and alias-aware, including ``torch.cuda.get_device_name()`` and
   JAX ``device_kind`` strings. The string is normalised (lowercase, vendor words dropped,
   separators collapsed), matched exactly against names and aliases, and otherwise resolved to
   the longest name or alias whose tokens appear as a run in it: GB200 beats B200, GH200 beats
   H200, H200 beats H20, L40S beats L4, A100 beats A10G beats A10, and "H100 NVL"/"H100 PCIe"
   beat "H100". A bare "H100" (or "H200", "A100", "V100") means the SXM part. Instance names
   (trn1n, trn2n, inf2) resolve to their chip.
7. A name never becomes another product. A run match followed by a variant word (``D``, ``Ti``,
   ``SUPER``, ``Laptop``, ``Mobile``, ``Max-Q``, ``lite``) is refused, and so is a MIG slice
   (``... MIG 3g.20gb``): its share of the GPU is not the whole GPU's peak. Both raise
   ``RefusedNameError`` saying why and how to state the peak, unless a name or alias registered
   for that exact variant or slice matches.
8. Nothing falls back to a default: an unknown name raises ``UnknownAcceleratorError`` with
   close matches of the same vendor and family (``Tesla T-4`` suggests T4, never TPU v4), a
   missing dtype raises ``DtypeNotAvailableError`` listing what exists.

Teams add their own hardware with :func:`register_accelerator`, :func:`load_csv`, or the
environment variable ``MFU_ACCELERATORS_CSV`` (``os.pathsep``-separated CSV paths, read when the
registry is first built). Only the standard library is imported, so ``mfu calc`` starts fast.
"""

from __future__ import annotations

import csv
import math
import os
import re

# Only what building the registry and one lookup need is imported here: `mfu calc --accelerator`
# must start fast. typing, datetime, difflib, pathlib and dataclasses load only where used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as _dt
    from collections.abc import Callable, Iterable, Mapping
    from pathlib import Path
    from typing import Any

__all__ = [
    "DTYPES",
    "ENV_VAR",
    "Accelerator",
    "DeviceNameError",
    "DtypeNotAvailableError",
    "MemoryBandwidth",
    "Peak",
    "Registry",
    "RefusedNameError",
    "RegistryError",
    "SliceRefusedError",
    "SystemMatch",
    "UnknownAcceleratorError",
    "accelerators",
    "canonical_dtype",
    "get_memory_bandwidth",
    "get_peak",
    "load_bandwidth_csv",
    "load_csv",
    "load_systems_csv",
    "normalise_name",
    "peak_table",
    "peaks_near",
    "register_accelerator",
    "read_sourced_csv",
    "resolve",
    "resolve_system",
]

DTYPES: tuple[str, ...] = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
PER_CHOICES: tuple[str, ...] = ("package", "device")
ENV_VAR = "MFU_ACCELERATORS_CSV"
# The shipped CSV as a string; the public ``BUILTIN_CSV`` (a ``pathlib.Path``) is made on first access.
_BUILTIN_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "accelerators.csv")

CSV_COLUMNS: tuple[str, ...] = (
    "name", "vendor", "dtype", "dense", "sparse", "unit", "devices_per_package",
    "aliases", "basis", "source", "read_on", "note",
)
_REQUIRED_COLUMNS = ("name", "vendor", "dtype", "dense", "basis", "source", "read_on")

# Spellings callers use for dtypes (torch/numpy names, MX/NV formats) -> registry dtype.
_DTYPE_ALIASES: dict[str, str] = {
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "f32": "fp32", "single": "fp32",
    "tfloat32": "tf32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "f16": "fp16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
    "mxfp8": "fp8", "float4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4", "fp4_e2m1": "fp4",
}

# Words that do not identify an accelerator: vendor and brand names, marks, generic nouns.
_NOISE_WORDS = frozenset({
    "nvidia", "amd", "intel", "habana", "labs", "google", "cloud", "aws", "amazon", "tesla",
    "geforce", "instinct", "radeon", "r", "tm", "gpu", "tensor", "core", "accelerator",
})
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_ISO_DATE = r"\d{4}-\d{2}-\d{2}"  # compiled only for dates the fast check in _is_iso_date cannot decide
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_URL = re.compile(r"https?://[^\s/]+\.[^\s]+")

# Words that, right after a matched name, make it another product: RTX 3090 Ti, RTX 4090 D, RTX 4090 Laptop.
_VARIANT_WORDS = frozenset({"d", "ti", "super", "laptop", "mobile", "lite"})
# Words that name one device of a multi-device package: "MI250X GCD" is one of the two Graphics Compute Dies
# of an MI250X, each its own ROCm device, so its peak is the per-device one.
_DEVICE_WORDS: dict[str, str] = {"gcd": "GCD"}
# Memory sizes a device string states, on normalised tokens: "80gb", "32gib", "80 gb", "144g hbm3e".
_SIZE_TOKEN = re.compile(r"(\d+)(?:gb|gib)")
_SIZE_G = re.compile(r"(\d+)g")
# MIG compute slices of a whole GPU (GPU instance profiles "<n>g.<m>gb"): A30 has 4, the other MIG GPUs 7.
_MIG_SLICES: dict[str, int] = {"A30": 4}
_MIG_PROFILE = r"(?:(\d+)c )?(\d+)g (\d+)gb\b"  # on normalised text: "1c.3g.20gb" -> "1c 3g 20gb"
# Words of a device string that name its vendor (normalisation drops several of them), for suggestions.
_VENDOR_HINTS: dict[str, str] = {
    "nvidia": "nvidia", "tesla": "nvidia", "geforce": "nvidia", "quadro": "nvidia", "rtx": "nvidia",
    "amd": "amd", "instinct": "amd", "radeon": "amd", "google": "google", "tpu": "google",
    "intel": "intel", "habana": "intel", "gaudi": "intel", "aws": "aws", "amazon": "aws",
    "trainium": "aws", "inferentia": "aws",
}
# Letter runs that are form factors or memory, not product families ("sxm4", "hbm3", "pcie 40gb").
_NOT_FAMILIES = frozenset({"sxm", "hbm", "gen", "pcie", "mig", "nvl", "x"})
_MODEL = r"([a-z]*)(\d+)([a-z]*)"


def __getattr__(name: str) -> object:
    """``BUILTIN_CSV``, the shipped CSV as a ``pathlib.Path``, built when first asked for."""
    if name == "BUILTIN_CSV":
        from pathlib import Path

        value = globals()["BUILTIN_CSV"] = Path(_BUILTIN_CSV)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- errors ----------------------------------------------------------------------------------


class RegistryError(ValueError):
    """Any problem with the peak registry: bad data, unknown name, unavailable dtype."""


class UnknownAcceleratorError(RegistryError):
    """The name matches no accelerator; ``suggestions`` holds close canonical names."""

    def __init__(self, message: str, *, name: str, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.suggestions = tuple(suggestions)


class RefusedNameError(UnknownAcceleratorError):
    """The name would match a listed accelerator but names another product (a variant such as
    ``RTX 3090 Ti``, a MIG slice, or a memory size the part does not come with); ``reason`` says why.
    ``suggestions`` is empty except for a memory-size refusal, where it names the close parts."""

    def __init__(self, message: str, *, name: str, reason: str, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message, name=name, suggestions=suggestions)
        self.reason = reason


class SliceRefusedError(RefusedNameError):
    """A MIG slice's name: its peak is a share of the GPU's, which the registry does not assume. Its text
    says how to state the share in Python's terms (``register_accelerator(...)``,
    ``peak_flops_per_accelerator=``); ``reason`` is the text before it, so a front end says it in its own
    (:func:`mfu_toolkit.render.vocabulary.phrase_error`: a row in a CSV listed in ``MFU_ACCELERATORS_CSV``)."""

    def __init__(self, *, name: str, reason: str) -> None:
        super().__init__(
            f"{reason}. State the slice's share yourself: register_accelerator({name!r}, vendor=..., "
            f"peaks={{dtype: your share of the GPU's peak}}, ...) under your own name (a slice gets roughly its "
            "fraction of the SMs, not exactly), or give the peak directly (peak_flops_per_accelerator=... in the "
            "Python API, --peak-tflops-per-gpu for mfu calc)", name=name, reason=reason)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_slice_refused_error, (self.name, self.reason))


def _slice_refused_error(name: str, reason: str) -> SliceRefusedError:
    return SliceRefusedError(name=name, reason=reason)


class DeviceNameError(RegistryError):
    """A name of one device of a package (``MI250X GCD``) asked for a per-package peak. Its text asks in
    Python's terms (``pass per='device', ...``); ``name``, ``device``, ``package`` and ``devices_per_package``
    are the data a front end asks with in its own (:func:`mfu_toolkit.render.vocabulary.phrase_error`), with
    ``stem`` (the text before the request), ``field`` (``"per"``), ``value`` (``"package"``) and ``asks``
    (the inputs that resolve it: ``per``, or the package's name for ``accelerator``)."""

    field = "per"
    value = "package"
    asks = ("per", "accelerator")

    def __init__(self, *, name: str, device: str, package: str, devices_per_package: int) -> None:
        self.name, self.device, self.package, self.devices_per_package = name, device, package, devices_per_package
        self.stem = (f"{name!r} names one {device}, one of the {devices_per_package} devices of a {package} "
                     "package, so its peak is per device")
        super().__init__(f"{self.stem}: pass per='device', or name the package ({package!r}) for per='package'")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_device_name_error, (self.name, self.device, self.package, self.devices_per_package))


def _device_name_error(name: str, device: str, package: str, devices_per_package: int) -> DeviceNameError:
    return DeviceNameError(name=name, device=device, package=package, devices_per_package=devices_per_package)


class DtypeNotAvailableError(RegistryError):
    """The accelerator exists but has no published peak for this dtype (or no sparse peak)."""

    def __init__(self, message: str, *, accelerator: str, dtype: str, available: Iterable[str]) -> None:
        super().__init__(message)
        self.accelerator = accelerator
        self.dtype = dtype
        self.available = tuple(available)


# --- records ---------------------------------------------------------------------------------


def unit_of(dtype: str) -> str:
    """Unit of a peak: TOPS for int8, TFLOP/s otherwise."""
    return "TOPS" if dtype == "int8" else "TFLOP/s"


class _Record:
    """Base of the frozen records below: what ``@dataclass(frozen=True)`` gives, without importing
    ``dataclasses`` (and through it inspect, ast and dis) on the start-up path of ``mfu calc``.

    Subclasses list their fields in ``__slots__`` (the order of ``__init__``, ``repr`` and equality)
    and those that enter the hash in ``_hash_fields``. Instances compare equal when of the same class
    with equal fields; assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``.
    """

    __slots__ = ()
    _hash_fields: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in self._hash_fields))

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__)
        return f"{self.__class__.__qualname__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[object, ...]:
        # Slots plus a refusing __setattr__: pickle and copy rebuild through __init__.
        return (self.__class__, self._values())


class Peak(_Record):
    """One resolved peak, with everything needed to cite it."""

    __slots__ = ("accelerator", "dtype", "tflops", "sparse", "per", "devices_per_package", "basis", "source",
                 "read_on", "note")
    __match_args__ = __slots__
    _hash_fields = __slots__

    accelerator: str
    dtype: str
    tflops: float
    sparse: bool
    per: str
    devices_per_package: int
    basis: str
    source: str
    read_on: str
    note: str

    def __init__(self, accelerator: str, dtype: str, tflops: float, sparse: bool, per: str,
                 devices_per_package: int, basis: str, source: str, read_on: str, note: str) -> None:
        init = object.__setattr__
        init(self, "accelerator", accelerator)
        init(self, "dtype", dtype)
        init(self, "tflops", tflops)
        init(self, "sparse", sparse)
        init(self, "per", per)
        init(self, "devices_per_package", devices_per_package)
        init(self, "basis", basis)
        init(self, "source", source)
        init(self, "read_on", read_on)
        init(self, "note", note)

    @property
    def flops(self) -> float:
        """Peak in FLOP/s (OP/s for int8): ``tflops * 1e12``."""
        return self.tflops * 1e12

    @property
    def unit(self) -> str:
        """TOPS for int8, TFLOP/s otherwise."""
        return unit_of(self.dtype)

    def describe(self) -> str:
        """One line naming the value, what it is per, its basis and its source."""
        kind = "sparse" if self.sparse else "dense"
        per = f"per {self.per}"
        if self.devices_per_package > 1:
            per += (f" (1/{self.devices_per_package} of a package)" if self.per == "device"
                    else f" ({self.devices_per_package} devices)")
        return (f"{self.accelerator} {self.dtype} {kind}: {self.tflops:,.6g} {self.unit} {per} "
                f"({self.basis}; source: {self.source}, read {self.read_on})")


class Accelerator(_Record):
    """An accelerator's peaks per dtype (dense and sparse), with basis, source and date per dtype.

    The per-dtype dicts default to new empty dicts and do not enter the hash.
    """

    __slots__ = ("name", "vendor", "aliases", "devices_per_package", "note", "dense", "sparse", "basis",
                 "source", "read_on", "notes")
    __match_args__ = __slots__
    _hash_fields = ("name", "vendor", "aliases", "devices_per_package", "note")

    name: str
    vendor: str
    aliases: tuple[str, ...]
    devices_per_package: int
    note: str
    dense: dict[str, float]
    sparse: dict[str, float]
    basis: dict[str, str]
    source: dict[str, str]
    read_on: dict[str, str]
    notes: dict[str, str]

    def __init__(self, name: str, vendor: str, aliases: tuple[str, ...], devices_per_package: int, note: str,
                 dense: dict[str, float] | None = None, sparse: dict[str, float] | None = None,
                 basis: dict[str, str] | None = None, source: dict[str, str] | None = None,
                 read_on: dict[str, str] | None = None, notes: dict[str, str] | None = None) -> None:
        init = object.__setattr__
        init(self, "name", name)
        init(self, "vendor", vendor)
        init(self, "aliases", aliases)
        init(self, "devices_per_package", devices_per_package)
        init(self, "note", note)
        init(self, "dense", {} if dense is None else dense)
        init(self, "sparse", {} if sparse is None else sparse)
        init(self, "basis", {} if basis is None else basis)
        init(self, "source", {} if source is None else source)
        init(self, "read_on", {} if read_on is None else read_on)
        init(self, "notes", {} if notes is None else notes)

    def dtypes(self) -> list[str]:
        """Dtypes with a published dense peak, in ``DTYPES`` order."""
        return [d for d in DTYPES if d in self.dense]

    def sparse_dtypes(self) -> list[str]:
        """Dtypes with a published sparse peak, in ``DTYPES`` order."""
        return [d for d in DTYPES if d in self.sparse]


class _Row:
    """One validated CSV row (or one dtype of a register_accelerator call)."""

    __slots__ = ("origin", "name", "vendor", "dtype", "dense", "sparse", "devices_per_package", "aliases",
                 "basis", "source", "read_on", "note")

    def __init__(self, origin: str, name: str, vendor: str, dtype: str | None, dense: float | None,
                 sparse: float | None, devices_per_package: int, aliases: tuple[str, ...], basis: str,
                 source: str, read_on: str, note: str) -> None:
        self.origin, self.name, self.vendor, self.dtype = origin, name, vendor, dtype
        self.dense, self.sparse, self.devices_per_package, self.aliases = dense, sparse, devices_per_package, aliases
        self.basis, self.source, self.read_on, self.note = basis, source, read_on, note


# --- normalisation and validation ------------------------------------------------------------


def normalise_name(name: str) -> str:
    """Lowercase, drop vendor/brand words, collapse separators: ``'NVIDIA A100-SXM4-80GB'`` -> ``'a100 sxm4 80gb'``."""
    words = _NON_ALNUM.sub(" ", name.lower()).split()
    return " ".join(w for w in words if w not in _NOISE_WORDS)


_NORMALISED: dict[str, str] = {}  # loaded names and aliases -> normalise_name(); they repeat on every row


def _normalised(label: str) -> str:
    """``normalise_name`` for names and aliases of loaded data, remembered."""
    key = _NORMALISED.get(label)
    if key is None:
        key = _NORMALISED[label] = normalise_name(label)
    return key


def _is_iso_date(text: str) -> bool:
    """Whether ``text`` is an ISO date ``YYYY-MM-DD`` naming a real day, as ``datetime.date.fromisoformat``
    decides; plain ASCII dates are checked here, anything else by ``datetime`` (imported only then)."""
    if len(text) == 10 and text.isascii() and text[4] == "-" and text[7] == "-":
        year, month, day = text[:4], text[5:7], text[8:]
        if year.isdigit() and month.isdigit() and day.isdigit():
            y, m, d = int(year), int(month), int(day)
            if y < 1 or not 1 <= m <= 12:
                return False
            leap = m == 2 and y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
            return 1 <= d <= _DAYS_IN_MONTH[m - 1] + leap
    if not re.fullmatch(_ISO_DATE, text):
        return False
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_dtype(dtype: object, param: str = "dtype") -> str:
    """Canonical dtype, or an error naming the parameter, the allowed values and the value received."""
    if isinstance(dtype, str):
        key = dtype.strip().lower().removeprefix("torch.").removeprefix("jnp.").removeprefix("np.")
        key = _DTYPE_ALIASES.get(key, key)
        if key in DTYPES:
            return key
    raise RegistryError(f"{param} must be one of {', '.join(DTYPES)} (or a common spelling such as "
                        f"'bfloat16'); got {dtype!r}")


def canonical_dtype(dtype: str) -> str:
    """The registry's name for a dtype spelling (``"bfloat16"`` -> ``"bf16"``, ``"torch.float8_e4m3fn"``
    -> ``"fp8"``); ``RegistryError`` naming the allowed values for anything else."""
    return _check_dtype(dtype)


def _check_per(per: object) -> str:
    if per not in PER_CHOICES:
        raise RegistryError(f"per must be one of {', '.join(repr(p) for p in PER_CHOICES)}; got {per!r}")
    return str(per)


def _parse_number(text: str, column: str, fail: Callable[[str, str], RegistryError]) -> float:
    try:
        value = float(text)
    except ValueError:
        raise fail(column, f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise fail(column, f"{text!r} must be a positive finite number")
    return value


_ALIASES: dict[str, tuple[str, ...]] = {}  # aliases fields already validated -> their aliases


def _parse_aliases(text: str, fail: Callable[[str, str], RegistryError]) -> tuple[str, ...]:
    """The ``|``-separated aliases of a row, each with identifying text (rows of one accelerator repeat them)."""
    aliases = _ALIASES.get(text)
    if aliases is None:
        aliases = tuple(a.strip() for a in text.split("|") if a.strip())
        for alias in aliases:
            if not _normalised(alias):
                raise fail("aliases", f"{alias!r} has no identifying text once vendor words are removed")
        _ALIASES[text] = aliases
    return aliases


def _row_access(raw: Mapping[str, str], origin: str) -> tuple[Callable[[str, str], RegistryError],
                                                                Callable[[str], str]]:
    """``fail(column, message)``: the error naming ``origin`` (file:line) and the field; ``get(column)``: its
    stripped text."""

    def fail(column: str, message: str) -> RegistryError:
        return RegistryError(f"{origin}: field {column!r}: {message}")

    def get(column: str) -> str:
        return (raw.get(column) or "").strip()

    return fail, get


def _parse_row(raw: Mapping[str, str], origin: str) -> _Row:
    """Validate one row of text fields; every error names ``origin`` (file:line) and the field."""
    fail, get = _row_access(raw, origin)
    name = get("name")
    if not name:
        raise fail("name", "missing")
    if not _normalised(name):
        raise fail("name", f"{name!r} has no identifying text once vendor words are removed")
    vendor = get("vendor")
    if not vendor:
        raise fail("vendor", "missing")
    dtype = get("dtype").lower() or None
    if dtype is not None and dtype not in DTYPES:
        raise fail("dtype", f"{dtype!r} is not one of {', '.join(DTYPES)}")
    dense_text, sparse_text = get("dense"), get("sparse")
    dense = sparse = None
    if dtype is None:
        if dense_text or sparse_text:
            raise fail("dtype", "missing: a row with a peak needs a dtype")
    else:
        if not dense_text:
            raise fail("dense", f"missing: every {dtype} row needs its dense peak")
        dense = _parse_number(dense_text, "dense", fail)
        if sparse_text:
            sparse = _parse_number(sparse_text, "sparse", fail)
            if sparse <= dense:
                raise fail("sparse", f"{sparse:g} is not above the dense {dense:g}: the dense column takes "
                                     "the dense peak, the sparse column the vendor's sparse (asterisk) figure")
    unit = get("unit")
    if unit and (dtype is None or unit != unit_of(dtype)):
        expected = "empty (no dtype)" if dtype is None else repr(unit_of(dtype))
        raise fail("unit", f"{unit!r} does not fit dtype {dtype!r}: expected {expected}")
    dpp_text = get("devices_per_package") or "1"
    try:
        dpp = int(dpp_text)
    except ValueError:
        raise fail("devices_per_package", f"{dpp_text!r} is not a whole number") from None
    if dpp < 1:
        raise fail("devices_per_package", f"{dpp} must be at least 1")
    aliases = _parse_aliases(get("aliases"), fail)
    basis = get("basis")
    if not basis:
        raise fail("basis", "missing: say what the figure assumes (form factor, power, clock)")
    source = get("source")
    if not source:
        raise fail("source", "missing: every peak needs a source URL (vendor datasheet or official spec page)")
    if not _URL.fullmatch(source):
        raise fail("source", f"{source!r} is not an http(s) URL")
    read_on = get("read_on")
    if not read_on:
        raise fail("read_on", "missing: give the ISO date (YYYY-MM-DD) the source was read")
    if not _is_iso_date(read_on):
        raise fail("read_on", f"{read_on!r} is not an ISO date (YYYY-MM-DD)")
    return _Row(origin, name, vendor, dtype, dense, sparse, dpp, aliases, basis, source, read_on, get("note"))


def _read_text(path: str | Path) -> str:
    """The file as ``Path.read_text(encoding="utf-8-sig")`` reads it (BOM dropped, universal newlines),
    without loading the utf-8-sig codec unless the file is not valid UTF-8 (then it raises as before)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8-sig")  # raises the error read_text would have raised
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_sourced_csv(path: str | Path, *, columns: Iterable[str], required: Iterable[str],
                     parse_row: Callable[[dict[str, str], str], object],
                     error: Callable[[str], Exception], what: str) -> list:
    """``parse_row(fields, "file:line")`` for each data row of a sourced-data CSV (this registry's,
    the published-MFU table's). Blank lines and lines starting with '#' are skipped, line numbers
    stay the file's; a bad header or row is ``error(message)`` naming ``file:line``."""
    columns, required = tuple(columns), tuple(required)
    try:
        text = _read_text(path)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    # Blank out comment lines instead of dropping them, so line numbers stay those of the file.
    lines = ["\n" if line.lstrip().startswith("#") else line for line in text.splitlines(keepends=True)]
    reader = csv.reader(lines)
    header: list[str] | None = None
    rows: list = []
    for fields in reader:
        line = reader.line_num
        if not any(f.strip() for f in fields):
            continue
        if header is None:
            header = [f.strip().lower() for f in fields]
            missing = [c for c in required if c not in header]
            unknown = [c for c in header if c not in columns]
            if missing or unknown or len(set(header)) != len(header):
                raise error(
                    f"{path}:{line}: bad header: missing {missing or 'nothing'}, unknown {unknown or 'nothing'}"
                    f"{', duplicated columns' if len(set(header)) != len(header) else ''}; "
                    f"columns are {', '.join(columns)}")
            continue
        if len(fields) != len(header):
            raise error(f"{path}:{line}: {len(fields)} fields where the header has {len(header)}")
        rows.append(parse_row(dict(zip(header, fields, strict=True)), f"{path}:{line}"))
    if header is None:
        raise error(f"{path}: no header row; columns are {', '.join(columns)}")
    return rows


def _read_csv(path: str | Path) -> list[_Row]:
    """Rows of an accelerator CSV; blank lines and lines starting with '#' are skipped."""
    return read_sourced_csv(path, columns=CSV_COLUMNS, required=_REQUIRED_COLUMNS, parse_row=_parse_row,
                            error=RegistryError, what="accelerator CSV")


def _common_note(notes: list[str]) -> str:
    """The note every row shares: identical notes, else their common leading sentences."""
    notes = [n for n in notes if n]
    if not notes:
        return ""
    prefix = os.path.commonprefix(notes)
    while prefix:
        if all(n == prefix for n in notes) or (
                prefix.endswith(".") and all(n == prefix or n[len(prefix)] == " " for n in notes)):
            return prefix
        cut = prefix[:-1].rfind(". ")
        prefix = prefix[: cut + 1] if cut >= 0 else ""
    return ""


def _build(rows: list[_Row]) -> list[Accelerator]:
    """Group validated rows into accelerators, checking that rows of one accelerator agree."""
    groups: dict[str, list[_Row]] = {}
    for row in rows:
        groups.setdefault(_normalised(row.name), []).append(row)
    built = []
    for group in groups.values():
        first = group[0]
        dense: dict[str, float] = {}
        sparse: dict[str, float] = {}
        basis: dict[str, str] = {}
        source: dict[str, str] = {}
        read_on: dict[str, str] = {}
        notes: dict[str, str] = {}
        declared: list[str] = []
        seen: dict[str, str] = {}
        for row in group:
            for attr in ("vendor", "devices_per_package"):
                if getattr(row, attr) != getattr(first, attr):
                    raise RegistryError(f"{row.origin}: field {attr!r}: {getattr(row, attr)!r} disagrees with "
                                        f"{getattr(first, attr)!r} for {first.name!r} at {first.origin}")
            if row.dtype is None:
                declared.append(f"Checked {row.source} on {row.read_on} ({row.basis}).")
                continue
            if row.dtype in seen:
                raise RegistryError(f"{row.origin}: field 'dtype': {first.name!r} {row.dtype} already given "
                                    f"at {seen[row.dtype]}")
            seen[row.dtype] = row.origin
            assert row.dense is not None
            dense[row.dtype] = row.dense
            if row.sparse is not None:
                sparse[row.dtype] = row.sparse
            basis[row.dtype], source[row.dtype], read_on[row.dtype] = row.basis, row.source, row.read_on
            if row.note:
                notes[row.dtype] = row.note
        note = " ".join(x for x in [_common_note([r.note for r in group])] + declared if x)
        aliases = tuple(dict.fromkeys(a for r in group for a in r.aliases))
        built.append(Accelerator(name=first.name, vendor=first.vendor, aliases=aliases,
                                 devices_per_package=first.devices_per_package, note=note,
                                 dense={d: dense[d] for d in DTYPES if d in dense},
                                 sparse={d: sparse[d] for d in DTYPES if d in sparse},
                                 basis=basis, source=source, read_on=read_on, notes=notes))
    return built


def _contains_run(tokens: list[str], run: list[str]) -> bool:
    n = len(run)
    return any(tokens[i:i + n] == run for i in range(len(tokens) - n + 1))


def _variant_after(tokens: list[str], run: list[str]) -> str:
    """The variant word right after the first occurrence of ``run`` in ``tokens`` ('' if none)."""
    n = len(run)
    for i in range(len(tokens) - n + 1):
        if tokens[i:i + n] == run:
            rest = tokens[i + n:i + n + 2]
            if rest and rest[0] in _VARIANT_WORDS:
                return rest[0]
            return "max-q" if rest == ["max", "q"] else ""
    return ""


def _memory_sizes(tokens: list[str]) -> frozenset[int]:
    """Memory sizes in GB that normalised tokens state: '80gb', '32gib', '80 gb', or '144g' before an 'hbm...'
    token (a bare '3g' is a MIG profile's slice count, not memory)."""
    sizes = set()
    for i, token in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        m = _SIZE_TOKEN.fullmatch(token)
        if m is None and token.isdigit() and after in ("gb", "gib"):
            sizes.add(int(token))
            continue
        m = m or (_SIZE_G.fullmatch(token) if after.startswith("hbm") else None)
        if m is not None:
            sizes.add(int(m[1]))
    return frozenset(sizes)


_BANDWIDTH_SIZES: dict[str, frozenset[int]] | None = None


def _bandwidth_sizes() -> dict[str, frozenset[int]]:
    """Normalised name -> memory sizes stated in the ``memory`` column of ``memory_bandwidth.csv`` (read raw:
    its rows name registry accelerators, and parsing them through the registry would recurse)."""
    global _BANDWIDTH_SIZES
    if _BANDWIDTH_SIZES is None:
        lines = [line for line in _read_text(_BANDWIDTH_CSV).splitlines() if not line.lstrip().startswith("#")]
        _BANDWIDTH_SIZES = {normalise_name(r.get("name") or ""):
                            _memory_sizes(normalise_name(r.get("memory") or "").split())
                            for r in csv.DictReader(lines)}
    return _BANDWIDTH_SIZES


def _models(tokens: list[str]) -> list[tuple[str, str]]:
    """(family letters, number) of the model tokens: 'a100' -> ('a', '100'), 'rtx 4090' -> ('rtx', '4090')."""
    found: list[tuple[str, str]] = []
    for i, token in enumerate(tokens):
        m = re.fullmatch(_MODEL, token)
        if m is None:
            continue
        letters = m[1]
        if not letters:
            if m[3] in ("gb", "g", "w", "mhz") or not i or not tokens[i - 1].isalpha():
                continue  # a size such as '80gb', or a number with no family before it
            letters = tokens[i - 1]
        if letters not in _NOT_FAMILIES:
            found.append((letters, m[2]))
    return found


# --- the registry ----------------------------------------------------------------------------


class Registry:
    """A set of accelerators with alias lookup; the module functions use one shared instance.

    ``Registry()`` loads the shipped CSV and the CSVs named in ``MFU_ACCELERATORS_CSV``;
    ``Registry(builtin=False, env=False)`` starts empty (useful in tests).
    """

    def __init__(self, *, builtin: bool = True, env: bool = True) -> None:
        self._accelerators: dict[str, Accelerator] = {}  # canonical name -> accelerator
        self._keys: dict[str, str] = {}  # normalised name or alias -> canonical name
        if builtin:
            # BUILTIN_CSV is in globals() once read (or replaced); until then, the string saves pathlib.
            self.load_csv(globals().get("BUILTIN_CSV", _BUILTIN_CSV))
        if env:
            for part in os.environ.get(ENV_VAR, "").split(os.pathsep):
                if part.strip():
                    from pathlib import Path

                    path = Path(part.strip()).expanduser()
                    if not path.is_file():
                        raise RegistryError(f"{ENV_VAR} names {str(path)!r}, which is not a file")
                    self.load_csv(path)

    # loading -------------------------------------------------------------------------------

    def load_csv(self, path: str | os.PathLike[str], *, replace: bool = False) -> list[str]:
        """Add the accelerators of a CSV in the shipped format; returns their canonical names.

        A name that already exists raises ``RegistryError`` unless ``replace=True``.
        """
        if path is not _BUILTIN_CSV:  # the shipped file's path is already absolute and normalised
            from pathlib import Path

            path = Path(path)
        return [acc.name for acc in self._add(_build(_read_csv(path)), replace=replace, origin=str(path))]

    def register(self, name: str, *, vendor: str, peaks: Mapping[str, float],
                 sparse_peaks: Mapping[str, float] | None = None, aliases: Iterable[str] = (),
                 devices_per_package: int = 1, basis: str, source: str, read_on: str | _dt.date,
                 note: str = "", replace: bool = False) -> Accelerator:
        """Add one accelerator, validated exactly like a CSV row; see :func:`register_accelerator`."""
        from collections.abc import Mapping

        origin = f"register_accelerator({name!r})"
        if not isinstance(peaks, Mapping) or not peaks:
            raise RegistryError(f"{origin}: field 'peaks': give a non-empty dict of dense peaks, "
                                f"e.g. {{'bf16': 989.4}}; got {peaks!r}")
        sparse_peaks = dict(sparse_peaks or {})
        if isinstance(aliases, str):
            aliases = (aliases,)
        alias_list = [str(a) for a in aliases]
        for a in alias_list:
            if "|" in a:
                raise RegistryError(f"{origin}: field 'aliases': {a!r} contains '|'")
        dense_by_dtype: dict[str, object] = {}
        for key, value in peaks.items():
            dense_by_dtype[_check_dtype(key, f"{origin}: peaks key")] = value
        sparse_by_dtype: dict[str, object] = {}
        for key, value in sparse_peaks.items():
            dtype = _check_dtype(key, f"{origin}: sparse_peaks key")
            if dtype not in dense_by_dtype:
                raise RegistryError(f"{origin}: field 'sparse_peaks': {dtype} has a sparse peak but no dense "
                                    "peak in 'peaks'")
            sparse_by_dtype[dtype] = value
        for label, values in (("peaks", dense_by_dtype), ("sparse_peaks", sparse_by_dtype)):
            for dtype, value in values.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise RegistryError(f"{origin}: field {label!r}: {dtype} peak must be a number; got {value!r}")
        if not isinstance(read_on, str):
            import datetime

            if isinstance(read_on, datetime.date):
                read_on = read_on.isoformat()
        if isinstance(devices_per_package, bool) or not isinstance(devices_per_package, int):
            raise RegistryError(f"{origin}: field 'devices_per_package': must be an int; "
                                f"got {devices_per_package!r}")
        rows = []
        for dtype, value in dense_by_dtype.items():
            sparse_value = sparse_by_dtype.get(dtype)
            raw = {
                "name": str(name), "vendor": str(vendor), "dtype": dtype, "dense": repr(float(value)),
                "sparse": "" if sparse_value is None else repr(float(sparse_value)),
                "devices_per_package": str(devices_per_package), "aliases": "|".join(alias_list),
                "basis": str(basis or ""), "source": str(source or ""), "read_on": str(read_on or ""),
                "note": str(note or ""),
            }
            rows.append(_parse_row(raw, origin))
        return self._add(_build(rows), replace=replace, origin=origin)[0]

    def _add(self, new: list[Accelerator], *, replace: bool, origin: str) -> list[Accelerator]:
        """Add accelerators atomically: check every name and alias first, then commit."""
        replaced: set[str] = set()
        for acc in new:
            existing = self._keys.get(_normalised(acc.name))
            if existing is not None:
                if not replace:
                    raise RegistryError(f"{origin}: accelerator {acc.name!r} already exists (as {existing!r}); "
                                        "pass replace=True to replace it")
                replaced.add(existing)
        keys = {k: v for k, v in self._keys.items() if v not in replaced}
        for acc in new:
            for label in (acc.name, *acc.aliases):
                key = _normalised(label)
                owner = keys.get(key)
                if owner is not None and owner != acc.name:
                    raise RegistryError(f"{origin}: {label!r} of {acc.name!r} already names {owner!r}")
                keys[key] = acc.name
        for name in replaced:
            del self._accelerators[name]
        for acc in new:
            self._accelerators[acc.name] = acc
        self._keys = keys
        return new

    # lookup --------------------------------------------------------------------------------

    def resolve(self, name: str) -> Accelerator:
        """The accelerator a name, alias or device string refers to (most specific match wins).

        Raises ``RefusedNameError`` for a variant of a listed product (``RTX 3090 Ti``), a MIG slice or
        a memory size the part does not come with, ``UnknownAcceleratorError`` with close matches for
        anything else unknown. A name of one device of a package (``MI250X GCD``) resolves to the
        package's accelerator; :meth:`get_peak` gives it the per-device peak.
        """
        return self._lookup(name)[0]

    def _lookup(self, name: str) -> tuple[Accelerator, str]:
        """The accelerator ``name`` refers to, and the device word it states ('GCD'; '' if none)."""
        if not isinstance(name, str):
            raise UnknownAcceleratorError(f"accelerator name must be a string; got {name!r}", name=repr(name))
        key = normalise_name(name)
        if key in self._keys:
            return self._accelerators[self._keys[key]], ""
        tokens = key.split()
        sliced = "mig" in tokens
        # A MIG slice matches only names or aliases registered for slices, never the whole GPU.
        best, best_key = self._longest_run(tokens, only_mig=sliced)
        if len(best) == 1:
            canonical = best.pop()
            variant = _variant_after(tokens, best_key.split())
            if variant:
                reason = (f"{name!r} is the {variant!r} variant of {canonical!r}, another product with another peak; "
                          f"the peak of {canonical!r} is not assumed for it")
                raise RefusedNameError(
                    f"{reason}. Add it with register_accelerator(...) or a CSV listed in {ENV_VAR}",
                    name=name, reason=reason)
            stated = _memory_sizes(tokens)
            if stated and not sliced:
                canonical = self._check_memory(name, canonical, best_key, stated)
            return self._device_of(name, self._accelerators[canonical], tokens)
        if len(best) > 1:
            names = sorted(best)
            raise UnknownAcceleratorError(
                f"accelerator {name!r} is ambiguous: it matches {', '.join(map(repr, names))} equally; "
                "give the full name", name=name, suggestions=names)
        if sliced:
            raise self._mig_refusal(name, tokens)
        suggestions = self._close_matches(name, key)
        hint = (f"close matches: {', '.join(map(repr, suggestions))}" if suggestions
                else f"known vendors: {', '.join(sorted({a.vendor for a in self._accelerators.values()}))}")
        raise UnknownAcceleratorError(
            f"unknown accelerator {name!r} ({hint}). No peak is assumed: add it with "
            f"register_accelerator(...) or a CSV listed in {ENV_VAR}", name=name, suggestions=suggestions)

    def _part_sizes(self, canonical: str) -> frozenset[int]:
        """Memory sizes (GB) a part comes with: those its name and aliases state, and its ``memory_bandwidth.csv``
        row's (empty when neither states one)."""
        acc = self._accelerators[canonical]
        sizes = set(_bandwidth_sizes().get(_normalised(canonical), ()))
        for label in (acc.name, *acc.aliases):
            sizes |= _memory_sizes(_normalised(label).split())
        return frozenset(sizes)

    def _check_memory(self, name: str, canonical: str, best_key: str, stated: frozenset[int]) -> str:
        """The part ``name`` refers to once its stated memory size is taken into account.

        Rule: a stated memory size that differs from a part's is never matched to it. Among the parts whose
        names contain the matched run (``H100`` -> H100 SXM, H100 PCIe, H100 NVL) the one part that comes with
        the stated size is taken ("H100 94GB" -> H100 NVL); with none or several, ``RefusedNameError`` names
        the close parts and their sizes. A part whose size nothing states is not contradicted.
        """
        part = self._part_sizes(canonical)
        if not part or stated <= part:
            return canonical
        run = best_key.split()
        family = sorted({c for k, c in self._keys.items() if _contains_run(k.split(), run)})
        fits = [c for c in family if stated <= self._part_sizes(c)]
        if len(fits) == 1:
            return fits[0]
        vendor = self._accelerators[canonical].vendor
        others = sorted(c for c, a in self._accelerators.items()
                        if c not in family and a.vendor == vendor and stated & self._part_sizes(c))
        close = fits or family + others

        def gb(sizes: frozenset[int]) -> str:
            return "/".join(map(str, sorted(sizes))) + " GB" if sizes else "size not listed"

        listing = ", ".join(f"{c!r} ({gb(self._part_sizes(c))})" for c in close)
        reason = (f"{name!r} states {gb(stated)}, but {canonical!r} comes with {gb(part)}: a stated memory size "
                  "that differs from a part's is never matched to it")
        raise RefusedNameError(f"{reason}. Close names: {listing}. Name the part, or add it with "
                               f"register_accelerator(...) or a CSV listed in {ENV_VAR}",
                               name=name, reason=reason, suggestions=close)

    def _device_of(self, name: str, acc: Accelerator, tokens: list[str]) -> tuple[Accelerator, str]:
        """``acc`` and the device word ``name`` states ('GCD'), refused where the package is one device."""
        word = next((_DEVICE_WORDS[t] for t in tokens if t in _DEVICE_WORDS), "")
        if word and acc.devices_per_package == 1:
            reason = (f"{name!r} names one {word}, one device of a multi-device package, but {acc.name!r} is one "
                      "device per package: the name fits no part")
            raise RefusedNameError(f"{reason}. Name the accelerator without {word!r}", name=name, reason=reason)
        return acc, word

    def _longest_run(self, tokens: list[str], *, only_mig: bool = False) -> tuple[set[str], str]:
        """Canonical names of the longest names/aliases found as a token run, and one such key."""
        best_len, best, best_key = 0, set(), ""
        for candidate, canonical in self._keys.items():
            run = candidate.split()
            if only_mig and "mig" not in run:
                continue
            if _contains_run(tokens, run):
                if len(candidate) > best_len:
                    best_len, best, best_key = len(candidate), {canonical}, candidate
                elif len(candidate) == best_len:
                    best.add(canonical)
        return best, best_key

    def _mig_refusal(self, name: str, tokens: list[str]) -> RefusedNameError:
        """The error for a MIG slice: which slice of which GPU, and how to state its peak."""
        at = tokens.index("mig")
        gpus, _ = self._longest_run(tokens[:at])
        gpu = gpus.pop() if len(gpus) == 1 else None
        total = _MIG_SLICES.get(gpu, 7) if gpu else None
        m = re.match(_MIG_PROFILE, " ".join(tokens[at + 1:]))
        if m:
            ci, slices, memory = m[1], int(m[2]), m[3]
            profile = f"{ci}c.{slices}g.{memory}gb" if ci else f"{slices}g.{memory}gb"
            used = int(ci) if ci else slices
            share = f"{used} of {gpu}'s {total} compute slices" if gpu else f"{used} compute slice(s)"
            what = f"MIG slice {profile} ({share}, {memory} GB)"
        else:
            used, what = 0, "MIG slice (profile not recognised)"
        of = f"of {gpu!r}" if gpu else "of a GPU"
        understate = (f" (the whole-GPU peak would understate its MFU about {total / used:.1f}x)"
                      if gpu and total and used else "")
        reason = (f"{name!r} is a {what} {of}, not the whole GPU: its peak is a share of the GPU's, which the "
                  f"registry does not assume{understate}")
        return SliceRefusedError(name=name, reason=reason)

    def _close_matches(self, name: str, key: str, n: int = 5) -> list[str]:
        """Canonical names close to ``key``: the same vendor, then the same family and nearest number.

        The vendor is the one the string names (``Tesla``, ``TPU``, ``Instinct``...) or else the vendor(s)
        of the family ('t' in ``T4``, 'mi' in ``MI300``); a different vendor's chip is never suggested
        on a matching number alone.
        """
        import difflib

        vendor_of = {c: a.vendor.lower() for c, a in self._accelerators.items()}
        vendors = {_VENDOR_HINTS[w] for w in _NON_ALNUM.sub(" ", name.lower()).split() if w in _VENDOR_HINTS}
        models = _models(key.split())
        family, number = models[0] if models else ("", "")
        keyed = [(k, c, _models(k.split())) for k, c in self._keys.items()]
        if family and not vendors:
            vendors = {vendor_of[c] for _, c, ms in keyed if any(f == family for f, _ in ms)}
        scored = []
        for k, c, ms in keyed:
            if vendors and vendor_of[c] not in vendors:
                continue
            numbers = [num for f, num in ms if f == family]
            closeness = max((difflib.SequenceMatcher(None, number, num).ratio() for num in numbers), default=0.0)
            ratio = difflib.SequenceMatcher(None, key, k).ratio()
            # Outside the family, only a close spelling counts, and only within a known vendor.
            if numbers or ratio >= (0.5 if vendors or not family else 1.0):
                scored.append((bool(numbers), closeness, ratio, c))
        scored.sort(key=lambda t: t[:3], reverse=True)
        found: list[str] = []
        for *_, canonical in scored:
            if canonical not in found:
                found.append(canonical)
        return found[:n]

    def get_peak(self, name: str, dtype: str = "bf16", *, sparse: bool = False, per: str | None = None) -> Peak:
        """Peak of one accelerator and dtype; dense unless ``sparse=True``; per package or per device.

        ``per=None`` means per package, except for a name of one device of a package (``MI250X GCD``):
        that is the per-device peak, and ``per="package"`` with such a name is an error.
        """
        dtype = _check_dtype(dtype)
        if per is not None:
            per = _check_per(per)
        if not isinstance(sparse, bool):
            raise RegistryError(f"sparse must be True or False; got {sparse!r}")
        acc, device = self._lookup(name)
        if device and per == "package":
            raise DeviceNameError(name=name, device=device, package=acc.name,
                                  devices_per_package=acc.devices_per_package)
        per = per or ("device" if device else "package")
        if dtype not in acc.dense:
            available = acc.dtypes()
            listing = ", ".join(available) if available else "none"
            raise DtypeNotAvailableError(
                f"{acc.name} has no published {dtype} peak in the registry; dtypes available: {listing}."
                + (f" {acc.note}" if not available and acc.note else ""),
                accelerator=acc.name, dtype=dtype, available=available)
        if sparse and dtype not in acc.sparse:
            available = acc.sparse_dtypes()
            raise DtypeNotAvailableError(
                f"{acc.name} has no published sparse {dtype} peak (only dense); dtypes with a sparse peak: "
                f"{', '.join(available) if available else 'none'}."
                # With no 2:4 figure at all, the note says why (no sparse mode, or another sparsity scheme).
                + (f" {acc.note}" if not available and acc.note else ""),
                accelerator=acc.name, dtype=dtype, available=available)
        value = acc.sparse[dtype] if sparse else acc.dense[dtype]
        dpp = acc.devices_per_package
        note = acc.notes.get(dtype, "")
        if device:
            note = (f"{name!r} names one {device} of a {acc.name} package ({dpp} devices): the per-device peak. "
                    + note).strip()
        return Peak(accelerator=acc.name, dtype=dtype, tflops=value / dpp if per == "device" else value,
                    sparse=sparse, per=per, devices_per_package=dpp, basis=acc.basis[dtype],
                    source=acc.source[dtype], read_on=acc.read_on[dtype], note=note)

    def accelerators(self, *, vendor: str | None = None, dtype: str | None = None) -> list[Accelerator]:
        """Accelerators in load order, optionally only one vendor's (case-insensitive) or those with ``dtype``."""
        wanted = None if dtype is None else _check_dtype(dtype)
        return [a for a in self._accelerators.values()
                if (vendor is None or a.vendor.lower() == vendor.strip().lower())
                and (wanted is None or wanted in a.dense)]

    def peak_table(self, *, vendor: str | None = None, dtype: str | None = None) -> list[dict[str, object]]:
        """One dict per (accelerator, dtype) with a peak, for printing or a DataFrame."""
        wanted = None if dtype is None else _check_dtype(dtype)
        rows: list[dict[str, object]] = []
        for acc in self.accelerators(vendor=vendor, dtype=wanted):
            for d in [wanted] if wanted else acc.dtypes():
                rows.append({
                    "name": acc.name, "vendor": acc.vendor, "dtype": d, "dense_tflops": acc.dense[d],
                    "sparse_tflops": acc.sparse.get(d), "unit": unit_of(d),
                    "devices_per_package": acc.devices_per_package, "basis": acc.basis[d],
                    "source": acc.source[d], "read_on": acc.read_on[d], "note": acc.notes.get(d, ""),
                })
        return rows

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.resolve(name)
        except UnknownAcceleratorError:
            return False
        return True

    def __len__(self) -> int:
        return len(self._accelerators)


# --- module-level API (one shared registry, built on first use) ------------------------------

_REGISTRY: Registry | None = None


def _registry() -> Registry:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry()
    return _REGISTRY


def _reset_registry() -> None:
    """Forget the shared registry; the next call rebuilds it (re-reading ``MFU_ACCELERATORS_CSV``)."""
    global _REGISTRY
    _REGISTRY = None


def resolve(name: str) -> Accelerator:
    """The accelerator a name, alias or ``torch``/JAX device string refers to (most specific wins)."""
    return _registry().resolve(name)


def get_peak(name: str, dtype: str = "bf16", *, sparse: bool = False, per: str | None = None) -> Peak:
    """Dense peak of ``name`` for ``dtype`` (sparse only with ``sparse=True``), per package or device
    (``per=None``: per package, or per device for a name of one device such as ``"MI250X GCD"``).

    Raises ``UnknownAcceleratorError`` or ``DtypeNotAvailableError``; never returns a fallback.
    """
    return _registry().get_peak(name, dtype, sparse=sparse, per=per)


def accelerators(*, vendor: str | None = None, dtype: str | None = None) -> list[Accelerator]:
    """Known accelerators, optionally filtered by vendor or by having a peak for ``dtype``."""
    return _registry().accelerators(vendor=vendor, dtype=dtype)


def peak_table(*, vendor: str | None = None, dtype: str | None = None) -> list[dict[str, object]]:
    """Rows (name, vendor, dtype, dense_tflops, sparse_tflops, unit, devices_per_package, basis, source,
    read_on, note) for printing; accelerators without a published peak are left out."""
    return _registry().peak_table(vendor=vendor, dtype=dtype)


def peaks_near(tflops: float, *, tolerance: float = 0.015) -> list[tuple[Accelerator, str, str, str, float]]:
    """Every registry peak within ``tolerance`` (relative) of ``tflops``, as (accelerator, dtype,
    ``"dense"``/``"sparse"``, ``"package"``/``"device"``, TFLOP/s): what a framework's TFLOP/s over its
    MFU may have divided by. Per device only for accelerators of more than one device per package."""
    out = []
    for a in accelerators():
        for kind, table in (("dense", a.dense), ("sparse", a.sparse)):
            for dtype, peak in table.items():
                for per in PER_CHOICES:
                    if per == "device" and a.devices_per_package == 1:
                        continue
                    value = peak / (a.devices_per_package if per == "device" else 1)
                    if abs(value / tflops - 1.0) <= tolerance:
                        out.append((a, dtype, kind, per, value))
    return out


def register_accelerator(name: str, *, vendor: str, peaks: Mapping[str, float],
                         sparse_peaks: Mapping[str, float] | None = None, aliases: Iterable[str] = (),
                         devices_per_package: int = 1, basis: str, source: str, read_on: str | _dt.date,
                         note: str = "", replace: bool = False) -> Accelerator:
    """Add an accelerator to the shared registry, validated like a CSV row.

    ``peaks`` maps dtype to the dense peak in TFLOP/s (TOPS for int8) per package; ``sparse_peaks``
    the vendor's sparse figures. ``source`` (URL) and ``read_on`` (ISO date) are required. An
    existing name raises ``RegistryError`` unless ``replace=True``.
    """
    return _registry().register(name, vendor=vendor, peaks=peaks, sparse_peaks=sparse_peaks, aliases=aliases,
                                devices_per_package=devices_per_package, basis=basis, source=source,
                                read_on=read_on, note=note, replace=replace)


def load_csv(path: str | os.PathLike[str], *, replace: bool = False) -> list[str]:
    """Add the accelerators of a CSV in the shipped format to the shared registry; returns their names."""
    return _registry().load_csv(path, replace=replace)


# --- memory bandwidth (memory_bandwidth.csv) -------------------------------------------------
# A roofline needs the bytes side as well: the vendor's peak memory bandwidth per package, each
# value with its source. One row per accelerator of the peak registry that publishes a figure.

_BANDWIDTH_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "memory_bandwidth.csv")
BANDWIDTH_COLUMNS: tuple[str, ...] = ("name", "memory", "bandwidth", "unit", "source", "read_on", "note")
_BANDWIDTH: dict[str, MemoryBandwidth] | None = None


class MemoryBandwidth(_Record):
    """Peak memory bandwidth of one accelerator package, with its source."""

    __slots__ = ("accelerator", "memory", "tb_per_s", "source", "read_on", "note")
    __match_args__ = __slots__
    _hash_fields = __slots__

    accelerator: str
    memory: str
    tb_per_s: float
    source: str
    read_on: str
    note: str

    def __init__(self, accelerator: str, memory: str, tb_per_s: float, source: str, read_on: str,
                 note: str) -> None:
        init = object.__setattr__
        for field, value in zip(self.__slots__, (accelerator, memory, tb_per_s, source, read_on, note),
                                strict=True):
            init(self, field, value)

    @property
    def bytes_per_s(self) -> float:
        """Bandwidth in B/s (decimal: 1 TB/s = 1e12 B/s, as datasheets print it)."""
        return self.tb_per_s * 1e12

    def describe(self) -> str:
        return (f"{self.accelerator} {self.memory}: {self.tb_per_s:,.6g} TB/s "
                f"(source: {self.source}, read {self.read_on})")


def _parse_bandwidth_row(raw: Mapping[str, str], origin: str) -> MemoryBandwidth:
    fail, get = _row_access(raw, origin)
    name = get("name")
    if not name:
        raise fail("name", "missing")
    if get("unit") != "TB/s":
        raise fail("unit", f"{get('unit')!r}: expected 'TB/s'")
    value = _parse_number(get("bandwidth"), "bandwidth", fail)
    source = get("source")
    if not _URL.fullmatch(source):
        raise fail("source", f"{source!r} is not an http(s) URL: no bandwidth without its source")
    read_on = get("read_on")
    if not _is_iso_date(read_on):
        raise fail("read_on", f"{read_on!r} is not an ISO date (YYYY-MM-DD)")
    try:
        canonical = resolve(name).name
    except UnknownAcceleratorError as exc:
        raise fail("name", f"{name!r} is not in the peak registry ({exc})") from None
    return MemoryBandwidth(canonical, get("memory"), value, source, read_on, get("note"))


def load_bandwidth_csv(path: str | os.PathLike[str]) -> list[MemoryBandwidth]:
    """Rows of a memory-bandwidth CSV in the shipped format; every error names file, line and field."""
    return read_sourced_csv(path, columns=BANDWIDTH_COLUMNS, required=("name", "bandwidth", "unit", "source",
                                                                       "read_on"),
                            parse_row=_parse_bandwidth_row, error=RegistryError, what="memory-bandwidth CSV")


def get_memory_bandwidth(name: str) -> MemoryBandwidth:
    """Peak memory bandwidth of ``name`` (any name or alias the peak registry resolves), per package.

    Raises ``UnknownAcceleratorError`` for an unknown name and ``RegistryError`` for a known
    accelerator whose vendor publishes no bandwidth figure in the table; never a default.
    """
    global _BANDWIDTH
    if _BANDWIDTH is None:
        _BANDWIDTH = {row.accelerator: row for row in load_bandwidth_csv(_BANDWIDTH_CSV)}
    canonical = resolve(name).name
    try:
        return _BANDWIDTH[canonical]
    except KeyError:
        listed = ", ".join(sorted(_BANDWIDTH))
        raise RegistryError(f"no memory bandwidth with a source for {canonical!r}; listed: {listed}") from None


# --- systems (systems.csv) -------------------------------------------------------------------
# A platform string names a system ("64xNVIDIA DGX H100", "XE9680x8H100-SXM-80GB", "tpu-v5p-1024"), not an
# accelerator. resolve_system() reads it as accelerator x count: the system table gives what a system's
# vendor states, embedded counts are read by pattern, and the accelerator always comes from the peak registry.
# The system itself is never taken for the accelerator.

_SYSTEMS_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "systems.csv")
SYSTEM_COLUMNS: tuple[str, ...] = ("name", "pattern", "accelerator", "per_system", "count_divisor", "source",
                                   "read_on", "note")
_SYSTEMS: list[_SystemRow] | None = None
# "N x SYSTEM": N systems; the system starts with a letter or is itself "M x ..." ("6x8xH100-SXM5-80GB").
_NODES_PREFIX = re.compile(r"\s*(\d+)\s*[xX]\s*(?=[^\W\d_]|\d+\s*[xX])(.*\S)\s*", re.S)
# Counts a name embeds next to the accelerator, for systems the table does not list: "XE9680x8H100-SXM-80GB",
# "R750-2xA100-PCIe-80GB", "GX2560M7_H100_SXM_80GBx4". Tried in order; the acc text must resolve in the registry.
_EMBEDDED_COUNTS = (
    re.compile(r"(?:.*?[a-z0-9])?[ _-]*x(?P<count>\d+)[ _-]*(?P<acc>[a-z].*)", re.I | re.S),
    re.compile(r"(?:.*?[ _-])?(?P<count>\d+)x[ _-]*(?P<acc>[a-z].*)", re.I | re.S),
    re.compile(r"(?P<acc>.*?[a-z].*?)[ _-]*x(?P<count>\d+)", re.I | re.S),
)


class SystemMatch(_Record):
    """What a platform string says about the hardware: the accelerator (as the registry names it, or None
    when the string does not fix it), accelerators per system and systems (None when not stated), the
    source of the per-system count, the text matched, and a note on how it was read."""

    __slots__ = ("accelerator", "per_system", "n_systems", "source", "text", "note")
    __match_args__ = __slots__
    _hash_fields = __slots__

    accelerator: str | None
    per_system: int | None
    n_systems: int | None
    source: str
    text: str
    note: str

    def __init__(self, accelerator: str | None, per_system: int | None, n_systems: int | None, source: str,
                 text: str, note: str = "") -> None:
        init = object.__setattr__
        for field, value in zip(self.__slots__, (accelerator, per_system, n_systems, source, text, note),
                                strict=True):
            init(self, field, value)

    @property
    def n_accelerators(self) -> int | None:
        """Systems x accelerators per system, where both are known (one system when no count is stated)."""
        if self.per_system is None:
            return None
        return (self.n_systems or 1) * self.per_system


class _SystemRow:
    """One validated row of the system table."""

    __slots__ = ("origin", "name", "pattern", "accelerator", "per_system", "divisor", "source", "note")

    def __init__(self, origin: str, name: str, pattern: re.Pattern[str], accelerator: str, per_system: int | None,
                 divisor: int, source: str, note: str) -> None:
        self.origin, self.name, self.pattern, self.accelerator = origin, name, pattern, accelerator
        self.per_system, self.divisor, self.source, self.note = per_system, divisor, source, note


def _positive_int(text: str, column: str, fail: Callable[[str, str], RegistryError]) -> int | None:
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise fail(column, f"{text!r} is not a whole number >= 1")
    return int(text)


def _parse_system_row(raw: Mapping[str, str], origin: str) -> _SystemRow:
    """Validate one system row: a compiling pattern, counts >= 1, a registry accelerator, a source URL and date."""
    fail, get = _row_access(raw, origin)
    try:
        pattern = re.compile(get("pattern"), re.I | re.S)
    except re.error as exc:
        raise fail("pattern", f"{get('pattern')!r} is not a regular expression ({exc})") from None
    if not get("pattern"):
        raise fail("pattern", "missing")
    accelerator = get("accelerator")
    if accelerator:
        try:
            accelerator = resolve(accelerator).name
        except UnknownAcceleratorError as exc:
            raise fail("accelerator", f"{accelerator!r} is not in the peak registry ({exc})") from None
    if not _URL.fullmatch(get("source")):
        raise fail("source", f"{get('source')!r} is not an http(s) URL: no system count without its source")
    if not _is_iso_date(get("read_on")):
        raise fail("read_on", f"{get('read_on')!r} is not an ISO date (YYYY-MM-DD)")
    divisor = _positive_int(get("count_divisor"), "count_divisor", fail) or 1
    return _SystemRow(origin, get("name") or get("pattern"), pattern, accelerator,
                      _positive_int(get("per_system"), "per_system", fail), divisor, get("source"), get("note"))


def load_systems_csv(path: str | os.PathLike[str]) -> list[_SystemRow]:
    """Rows of a system table in the shipped format; every error names file, line and field."""
    return read_sourced_csv(path, columns=SYSTEM_COLUMNS, required=("pattern", "source", "read_on"),
                            parse_row=_parse_system_row, error=RegistryError, what="system CSV")


def _registry_name(text: str) -> tuple[str | None, str]:
    """The registry name ``text`` resolves to, or None and why not."""
    try:
        return resolve(text).name, ""
    except UnknownAcceleratorError as exc:
        return None, str(exc)


def _from_row(row: _SystemRow, m: re.Match[str], n_systems: int | None, text: str) -> SystemMatch:
    """A table row's reading of a matched platform string."""
    groups = m.groupdict()
    accelerator, why = row.accelerator or None, ""
    if accelerator is None and groups.get("acc"):
        accelerator, why = _registry_name(groups["acc"])
    notes = [f"{row.name}: {row.note}" if row.note else row.name]
    if why:
        notes.append(f"the accelerator {groups['acc']!r} is not resolved: {why}")
    per = row.per_system
    if groups.get("count"):
        count = int(groups["count"])
        if count % row.divisor:
            notes.append(f"the name's count {count} is not a multiple of {row.divisor}: accelerators unknown")
            per = None
        else:
            stated = count // row.divisor
            if per is not None and stated != per:
                notes.append(f"the name states {stated} per system where the source gives {per}: "
                             "the name's count is used")
            per = stated
    if groups.get("systems"):
        if n_systems is not None and n_systems != int(groups["systems"]):
            notes.append(f"the prefix states {n_systems} systems, the name {groups['systems']}: the prefix is used")
        n_systems = n_systems if n_systems is not None else int(groups["systems"])
    return SystemMatch(accelerator, per, n_systems, row.source, text, "; ".join(notes))


def resolve_system(text: str) -> SystemMatch | None:
    """Accelerator x count a platform string states, or None when it names nothing the tables know.

    An ``"N x SYSTEM"`` prefix gives ``n_systems``. The rest is matched against ``systems.csv`` (the
    system's vendor-stated accelerators per system); otherwise a count embedded next to an accelerator
    name (``x8H100``, ``2xA100``, ``_80GBx4``) is read, the accelerator resolved through the registry;
    otherwise the whole text is tried as an accelerator name (the accelerator only, count unknown).
    """
    global _SYSTEMS
    if not isinstance(text, str) or not text.strip() or len(text) > 200:
        return None
    text = " ".join(text.split())
    m = _NODES_PREFIX.fullmatch(text)
    n_systems, rest = (int(m[1]), m[2]) if m else (None, text)
    if _SYSTEMS is None:
        _SYSTEMS = load_systems_csv(_SYSTEMS_CSV)
    for row in _SYSTEMS:
        hit = row.pattern.fullmatch(rest)
        if hit is not None:
            return _from_row(row, hit, n_systems, text)
    for pattern in _EMBEDDED_COUNTS:
        hit = pattern.fullmatch(rest)
        if hit is None:
            continue
        accelerator, _ = _registry_name(hit["acc"])
        if accelerator is not None:
            return SystemMatch(accelerator, int(hit["count"]), n_systems, "the count the name states", text,
                               f"{hit['count']} x {accelerator} read from {rest!r} ({hit['acc']!r} resolved in the "
                               "peak registry); the system is not in systems.csv")
    accelerator, _ = _registry_name(rest)
    if accelerator is None:
        return None
    return SystemMatch(accelerator, None, n_systems, "", text,
                       f"{rest!r} names the accelerator {accelerator} but no count per system")
