"""Helpers shared by the benchmark scripts (run them as ``python benchmarks/bench_*.py``)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import tfrec

BATCH = 1024  # records per parse batch, as TF users batch tf.data


def import_tf() -> Any:
    """TensorFlow, quietly; ImportError when it is not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf  # type: ignore[import-untyped]

    return tf


def optional_tf() -> tuple[Any, str]:
    """TensorFlow and its version, or ``None`` and why it is skipped."""
    try:
        tf = import_tf()
    except ImportError:
        return None, "skipped: not installed"
    return tf, tf.__version__


def arguments(
    description: str, workloads: Sequence[str], peers: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """The options every benchmark takes (``--peer``/``--dir`` run one peer in a subprocess)."""
    parser = argparse.ArgumentParser(description=description)
    if workloads:
        parser.add_argument("--workloads", nargs="+", choices=list(workloads), default=list(workloads))
    parser.add_argument("--repeat", type=int, default=3, help="timed runs after the warm-up (best is kept)")
    parser.add_argument("--quick", action="store_true", help="10x fewer records, for a smoke run")
    if peers:
        parser.add_argument("--peer", choices=list(peers), help=argparse.SUPPRESS)
        parser.add_argument("--dir", help=argparse.SUPPRESS)
    return parser


def batches(records: Sequence[bytes], size: int = BATCH) -> Iterator[Sequence[bytes]]:
    for start in range(0, len(records), size):
        yield records[start : start + size]


def versions(tf_version: str, *extra: str) -> str:
    """The line that says what was measured with."""
    return ", ".join(
        [
            f"python {platform.python_version()}",
            f"numpy {np.__version__}",
            f"tfrec {tfrec.__version__}",
            *extra,
            f"TensorFlow {tf_version}",
            f"{os.cpu_count()} CPUs",
        ]
    )


def scratch_parent() -> str | None:
    """Where temporary files go: tmpfs when there is one (disk speed would hide CPU costs)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def run_peer(
    script: str,
    peer: str,
    workload: str,
    directory: str,
    args: argparse.Namespace,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``script --peer peer`` in a subprocess (peers that cannot share a process with TensorFlow);
    return the JSON it prints last, or ``{"skipped": reason}``."""
    command = [sys.executable, os.path.abspath(script), "--peer", peer, "--dir", directory]
    command += ["--workloads", workload, "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"skipped": f"subprocess failed: {done.stderr.strip().splitlines()[-1:]}"}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def best_time(
    run: Callable[[], int], expected: int, repeat: int, setup: Callable[[], None] | None = None
) -> float:
    """Seconds of the fastest of ``repeat`` runs after one warm-up; every run must count ``expected``.

    ``setup`` runs before each run, untimed.
    """
    times = []
    for _ in range(repeat + 1):
        if setup is not None:
            setup()
        start = time.perf_counter()
        count = run()
        times.append(time.perf_counter() - start)
        if count != expected:
            raise SystemExit(f"error: a run counted {count} records, expected {expected}")
    return min(times[1:])


def taking_turns(runs: dict[str, tuple[Any, int]], repeat: int) -> tuple[dict[str, float], dict[str, float]]:
    """Each run's best wall and best CPU seconds (all threads) over ``repeat`` rounds after a warm-up
    round; the runs take turns within a round, so that a slow spell of a shared machine hits them all."""
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for attempt in range(repeat + 1):
        for label, (run, expected) in runs.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            if run() != expected:
                raise SystemExit(f"error: {label}: a run counted other than {expected} records")
            seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
            if attempt:
                wall[label] = min(wall.get(label, seconds), seconds)
                cpu[label] = min(cpu.get(label, cpu_seconds), cpu_seconds)
    return wall, cpu


def print_lines(lines: Sequence[Sequence[str]]) -> None:
    """Table rows as aligned columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:], strict=True)]
        print("  ".join(cells))
    print(flush=True)
