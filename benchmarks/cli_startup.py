"""Start-up time of `mfu calc` relative to a bare `python -c "import argparse"`.

Both are measured in this run, alternately, and the ratio of medians is printed (target <= 1.5).
`mfu calc` must import neither pandas, seaborn nor ipywidgets.

    .venv/bin/python benchmarks/cli_startup.py [--repeat 21]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The installed console script when there is one (what users type), else `python -m`.
_SCRIPT = Path(sys.executable).with_name("mfu")
MFU = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "mfu_toolkit"]
CALC = [*MFU, "calc", "--model-flops-per-step", "2.4e15",
        "--step-seconds", "1.2", "--gpus", "128", "--peak-tflops-per-gpu", "80", "--samples-per-step", "8192"]
CALC_REGISTRY = [*MFU, "calc", "--model-flops-per-step", "2.4e15",
                 "--step-seconds", "1.2", "--gpus", "128", "--accelerator", "H100", "--dtype", "bf16"]
BASELINE = [sys.executable, "-c", "import argparse"]


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=21)
    args = p.parse_args()
    heavy = subprocess.run([sys.executable, "-c",
                            "import sys, runpy; sys.argv=['mfu','calc','--model-flops-per-step','1e12',"
                            "'--step-seconds','1','--gpus','1','--accelerator','H100'];\n"
                            "from mfu_toolkit.cli import main\nmain(sys.argv[1:])\n"
                            "print(sorted(m for m in ('pandas','seaborn','ipywidgets','matplotlib') "
                            "if m in sys.modules))"],
                           capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    # Byte-compile first, as `pip install` does: the environment may set PYTHONDONTWRITEBYTECODE.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parents[1] / "mfu_toolkit")],
                   check=True, stdout=subprocess.DEVNULL)
    for cmd in (CALC, CALC_REGISTRY, BASELINE):  # warm the file cache
        wall(cmd)
    times: dict[str, list[float]] = {"calc": [], "calc_registry": [], "baseline": []}
    for _ in range(args.repeat):
        times["baseline"].append(wall(BASELINE))
        times["calc"].append(wall(CALC))
        times["calc_registry"].append(wall(CALC_REGISTRY))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"heavy modules imported by `mfu calc`: {heavy}")
    print(f"median wall time over {args.repeat} runs:")
    print(f"  python -c 'import argparse'        {med['baseline'] * 1e3:8.1f} ms")
    print(f"  mfu calc --peak-tflops-per-gpu     {med['calc'] * 1e3:8.1f} ms   "
          f"ratio {med['calc'] / med['baseline']:.2f}")
    print(f"  mfu calc --accelerator H100        {med['calc_registry'] * 1e3:8.1f} ms   "
          f"ratio {med['calc_registry'] / med['baseline']:.2f}")
    print("target: ratio <= 1.5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
