"""Peak resident memory of the current process, for the benchmarks' child processes (Linux).

``start_peak()`` resets the kernel's high-water mark (``/proc/self/clear_refs``) and returns the
current resident set; ``peak_since_start()`` reads the high-water mark since. Elsewhere both fall
back to ``getrusage``'s lifetime peak. Values in MiB.
"""

from __future__ import annotations

import resource


def _proc_status_mib(key: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def start_peak() -> float:
    """Reset the peak resident set (Linux: /proc/self/clear_refs) and return the current one, MiB."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        rss = _proc_status_mib("VmRSS")
        if rss is not None:
            return rss
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # fallback: the peak so far


def peak_since_start() -> float:
    hwm = _proc_status_mib("VmHWM")
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
