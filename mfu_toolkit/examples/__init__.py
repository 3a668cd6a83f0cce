"""Small sample logs shipped with the package, for a first run without one's own log.

``mfu analyze --example [NAME]`` analyses one of them with its own inputs (the facts its log
does not state) and prints exactly what ``mfu analyze PATH INPUTS`` prints on the same file;
``mfu analyze --examples`` (or ``--example list``) lists them. In Python::

    from mfu_toolkit import examples
    examples.path("kineto")          # the trace folder inside the installed package
    examples.get("kineto").args      # ('--preset', 'llama3-8b', '--seq-len', '8192', ...)

The logs are written by :mod:`mfu_toolkit.examples.make` (no real log behind them); each is a
job of Llama 3 8B on H100s, seen through one tool:

- ``megatron``: Megatron-LM's stdout (8 GPUs, 100 iterations, a checkpoint save); the log states
  the world size, dtype, batch and sequence length, the inputs name the model and the GPU;
- ``kineto``: PyTorch profiler traces of two FSDP ranks (three steps; one rank computes slower);
  the traces name the GPU and the world size, the inputs the model, batch and sequence length;
- ``recorded``: a folder written by :class:`mfu_toolkit.record.StepRecorder` (4 ranks, a rank
  that dies, a relaunch from the last checkpoint, a slow rank); the records state the GPU, the
  world size and the samples, the inputs the model and sequence length.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = "megatron"
LIST = "list"  # ``--example list`` lists the examples instead of running one

__all__ = ["DEFAULT", "EXAMPLES", "Example", "get", "listing", "names", "path"]


class Example:
    """A sample log: its ``name``, its ``file`` (relative to this package), the ``args`` it is analysed
    with (``mfu analyze`` flags) and a one-line ``summary``."""

    __slots__ = ("name", "file", "args", "summary")

    def __init__(self, name: str, file: str, args: tuple[str, ...], summary: str) -> None:
        self.name, self.file, self.args, self.summary = name, file, args, summary

    @property
    def path(self) -> Path:
        """Where the log lies in the installed package."""
        return HERE / self.file

    def command(self) -> str:
        """The ``mfu analyze`` command that prints the same answer."""
        return " ".join(["mfu analyze", _quoted(str(self.path)), *map(_quoted, self.args)])

    def __repr__(self) -> str:
        return f"Example({self.name!r}, {self.file!r}, {self.args!r})"


def _quoted(word: str) -> str:
    import shlex

    return shlex.quote(word)


EXAMPLES: dict[str, Example] = {e.name: e for e in (
    Example("megatron", "megatron_train.log", ("--preset", "llama3-8b", "--accelerator", "H100"),
            "Megatron-LM stdout: Llama 3 8B on 8 H100s, 100 iterations and a checkpoint save"),
    Example("kineto", "kineto",
            ("--preset", "llama3-8b", "--seq-len", "8192", "--global-batch", "2", "--dtype", "bf16"),
            "PyTorch profiler traces of 2 FSDP ranks (Llama 3 8B on H100s), 3 steps; rank 1 computes slower"),
    Example("recorded", "recorded", ("--preset", "llama3-8b", "--seq-len", "4096", "--dtype", "bf16"),
            "StepRecorder folder of a 4-rank job (Llama 3 8B on H100s): a rank dies, a relaunch, a slow rank"),
)}


def names() -> list[str]:
    """The examples' names, the default first."""
    return list(EXAMPLES)


def get(name: str | None = None) -> Example:
    """The example called ``name`` (default :data:`DEFAULT`); an unknown name is a ``LookupError``
    that lists the known ones."""
    name = DEFAULT if name is None else name
    try:
        return EXAMPLES[name]
    except KeyError:
        raise LookupError(f"no example {name!r}; the examples are {', '.join(EXAMPLES)} "
                          "(mfu analyze --examples lists them)") from None


def path(name: str | None = None) -> Path:
    """The path of example ``name``'s log (a file or a folder)."""
    return get(name).path


def listing() -> str:
    """What ``mfu analyze --examples`` prints: one line per example, with its inputs."""
    width = max(map(len, EXAMPLES))
    rows = [f"  {e.name:<{width}}  {e.summary}\n  {'':<{width}}  given as {' '.join(e.args)}"
            for e in EXAMPLES.values()]
    return (f"sample logs (mfu analyze --example NAME; without NAME: {DEFAULT}):\n\n" + "\n".join(rows)
            + f"\n\nEach prints exactly what `mfu analyze PATH INPUTS` prints on its file (a line on stderr says"
            f" which); the files lie in {HERE}.")
