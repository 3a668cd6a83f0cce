"""Devices identified by their capability figures where nothing names them (``device_ids.csv``).

A profile may describe a device by what it has instead of by name: XLA's device planes on ROCm state
``device_vendor``, ``compute_cap_major``/``compute_cap_minor``, ``core_count`` and ``memory_size``, and no
model. ``device_ids.csv``, beside the peak registry's ``accelerators.csv``, lists the devices such figures
identify for certain, each row from the vendor's datasheet with its source and the day it was read. It is
read once, with :func:`mfu_toolkit.hardware.read_sourced_csv` (the csv module: no pandas), and a bad row is
a :class:`mfu_toolkit.hardware.RegistryError` naming its line.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from .hardware import RegistryError, read_sourced_csv

__all__ = ["DeviceId", "identify", "load"]

_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "device_ids.csv")
_COLUMNS = ("vendor", "compute_cap", "cores", "memory_gib_min", "memory_gib_max", "accelerator", "source",
            "read_on", "note")


@dataclass(frozen=True)
class DeviceId:
    """One row: the figures of a whole device and the accelerator they identify (with where that is said)."""

    vendor: str
    major: int
    minor: int
    cores: int
    gib_min: float
    gib_max: float
    accelerator: str
    source: str
    where: str  # file:line of the row

    def matches(self, vendor: str, major: int, minor: int, cores: int, memory_bytes: int) -> bool:
        gib = memory_bytes / 2**30
        return ((vendor.strip().lower(), major, minor, cores) == (self.vendor, self.major, self.minor, self.cores)
                and self.gib_min <= gib < self.gib_max)


def _row(f: dict[str, str], where: str) -> DeviceId:
    try:
        major, minor = (int(x) for x in f["compute_cap"].strip().split("."))
        row = DeviceId(f["vendor"].strip().lower(), major, minor, int(f["cores"]), float(f["memory_gib_min"]),
                       float(f["memory_gib_max"]), f["accelerator"].strip(), f["source"].strip(), where)
    except ValueError as exc:
        raise RegistryError(f"{where}: bad device row ({exc})") from None
    if not (row.vendor and row.accelerator and row.source) or row.cores < 1 or not row.gib_min < row.gib_max:
        raise RegistryError(f"{where}: a device row needs a vendor, cores >= 1, memory_gib_min < memory_gib_max, "
                            "an accelerator and a source")
    return row


@functools.cache
def load(path: str = _CSV) -> tuple[DeviceId, ...]:
    """The rows of a device-identification CSV (by default the package's ``device_ids.csv``)."""
    return tuple(read_sourced_csv(path, columns=_COLUMNS, required=_COLUMNS, parse_row=_row, error=RegistryError,
                                  what="device identification CSV"))


def identify(vendor: str, major: int, minor: int, cores: int, memory_bytes: int) -> DeviceId | None:
    """The first row whose figures these are (vendor in any case, memory in bytes), else None."""
    return next((r for r in load() if r.matches(vendor, major, minor, cores, memory_bytes)), None)
