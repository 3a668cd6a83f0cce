"""Moved to :mod:`mfu_toolkit.audit` (it applies the user's inputs, a front end's work); the old
names work for one release, with a warning."""

from ..deprecation import moved

__getattr__ = moved(__name__, {name: "mfu_toolkit.audit" for name in (
    "KINDS", "AuditRow", "PeakMatch", "audit_frame", "audit_json", "audit_paths", "audit_run", "audit_files",
    "audit_text", "exit_status", "implied_peak", "log_files", "write_csv")})
