"""``mfu accelerators``: the peak-FLOPs registry with its sources (no pandas)."""

from __future__ import annotations

import argparse

from . import EXIT_OK, UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("accelerators",
                       description="Dense peaks per dtype from vendor datasheets; sparse shown apart.")
    p.add_argument("--dtype", help="only this dtype (e.g. bf16)")
    p.add_argument("--vendor", help="only this vendor (e.g. NVIDIA, AMD, Google, Intel, AWS)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=_run_accelerators)


def _run_accelerators(args: argparse.Namespace) -> int:
    from .. import hardware

    try:
        rows = hardware.peak_table(vendor=args.vendor, dtype=args.dtype)
    except hardware.RegistryError as exc:
        raise UsageError(" ".join(str(exc).split())) from None
    if not rows:
        raise UsageError(f"no accelerator matches vendor={args.vendor!r} dtype={args.dtype!r}")
    if args.json:
        import json

        print(json.dumps(rows, indent=2))
        return EXIT_OK
    header = ("accelerator", "vendor", "dtype", "dense TFLOP/s", "sparse", "dev/pkg", "source")
    table = [header]
    for r in rows:
        sparse = r.get("sparse_tflops")
        table.append((
            str(r["name"]), str(r["vendor"]), str(r["dtype"]), f"{r['dense_tflops']:,.1f}",
            "" if sparse in (None, "") else f"{sparse:,.1f}", str(r["devices_per_package"]), str(r["source"]),
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    for row in table:
        cells = [row[i].rjust(widths[i]) if i in (3, 4, 5) else row[i].ljust(widths[i]) for i in range(len(widths))]
        print("  ".join(cells) + "  " + row[-1])
    print(f"\n{len(rows)} rows. Dense peaks unless marked sparse; int8 in TOPS. "
          "Per package as the datasheet prints it (dev/pkg = framework devices per package).")
    return EXIT_OK

