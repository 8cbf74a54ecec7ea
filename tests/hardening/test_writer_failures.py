"""A writer that failed never publishes its file, and leaves no temporary file behind (findings 6, 7)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from childrun import run_child

import tfrec

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

RECORDS = 20_000
RECORD_SIZE = 100
TOTAL = RECORDS * (RECORD_SIZE + 16)  # uncompressed file size

# The child writes RECORDS records to out.tfrecord[.gz] under a file size limit, so the final drain
# in close() fails part-way; then the limit is lifted ("space is freed") and close() is called again.
_CLOSE_TWICE = """
import resource, tfrec
path = sys.argv[1] if len(sys.argv) > 1 else PATH
writer = tfrec.RecordWriter(PATH, compression=COMPRESSION, overwrite=True)
writer.write_many(bytes([i % 256]) * RECORD_SIZE for i in range(RECORDS))
outcome = {}
try:
    writer.close()
    outcome["first"] = "closed"
except OSError as exc:
    outcome["first"] = type(exc).__name__
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
try:
    writer.close()
    outcome["second"] = "closed"
except tfrec.TfrecError as exc:
    outcome["second"] = "TfrecError"
    outcome["chained"] = type(exc.__cause__).__name__
try:
    writer.write(b"more")
    outcome["write"] = "written"
except tfrec.TfrecError:
    outcome["write"] = "TfrecError"
outcome["files"] = sorted(os.listdir("."))
report(outcome)
"""


def _close_twice(tmp_path: Path, limit: int, compression: str | None) -> dict[str, object]:
    name = "out.tfrecord.gz" if compression else "out.tfrecord"
    code = (
        f"PATH, COMPRESSION, RECORDS, RECORD_SIZE = {name!r}, {compression!r}, {RECORDS}, {RECORD_SIZE}\n"
        + _CLOSE_TWICE
    )
    child = run_child(code, file_size=limit, cwd=tmp_path, timeout=60)
    assert child.returncode == 0, child.describe()
    return child.result  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "limit",
    [TOTAL - 5000, TOTAL - 40 * (RECORD_SIZE + 16), TOTAL - 1],
    ids=["mid-record", "on-a-record-boundary", "last-byte"],
)
def test_close_retried_after_disk_full_never_publishes(tmp_path: Path, limit: int) -> None:
    outcome = _close_twice(tmp_path, limit, None)
    assert outcome["first"] == "OSError"
    assert outcome["second"] == "TfrecError" and outcome["chained"] == "OSError"
    assert outcome["write"] == "TfrecError"
    assert outcome["files"] == []  # neither the final file nor the temporary one


def test_close_retried_after_disk_full_never_publishes_gzip(tmp_path: Path) -> None:
    outcome = _close_twice(tmp_path, 20_000, "gzip")
    assert outcome["first"] == "OSError" and outcome["second"] == "TfrecError"
    assert outcome["files"] == []


def test_a_file_published_earlier_is_left_untouched_by_a_failed_rewrite(tmp_path: Path) -> None:
    old = [b"old record"] * 3
    tfrec.write_records(tmp_path / "out.tfrecord", old)
    outcome = _close_twice(tmp_path, TOTAL - 5000, None)
    assert outcome["files"] == ["out.tfrecord"]
    assert list(tfrec.read_records(tmp_path / "out.tfrecord")) == old


_DISK_FULL_IN_WITH = """
import tfrec
try:
    with tfrec.RecordWriter("out.tfrecord") as writer:
        for i in range(RECORDS):
            writer.write(bytes([i % 256]) * RECORD_SIZE)
    report({"raised": None, "files": sorted(os.listdir("."))})
except OSError as exc:
    report({"raised": type(exc).__name__, "files": sorted(os.listdir("."))})
"""


@pytest.mark.parametrize("limit", [0, 5000, TOTAL // 2])
def test_disk_full_inside_a_with_block_leaves_no_temporary_file(tmp_path: Path, limit: int) -> None:
    code = f"RECORDS, RECORD_SIZE = {RECORDS}, {RECORD_SIZE}\n" + _DISK_FULL_IN_WITH
    child = run_child(code, file_size=limit, cwd=tmp_path)
    assert child.returncode == 0, child.describe()
    assert child.result == {"raised": "OSError", "files": []}


def test_an_exception_in_the_with_block_keeps_the_documented_partial_file_and_no_temporary(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.tfrecord"
    for _ in range(3):  # repeated runs accumulate nothing
        with pytest.raises(KeyError), tfrec.RecordWriter(path) as writer:
            writer.write_many([b"a", b"b"])
            raise KeyError("boom")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.tfrecord.partial"]
    assert list(tfrec.read_records(tmp_path / "out.tfrecord.partial", compression=None)) == [b"a", b"b"]


class _FailingStream(io.BytesIO):
    """Fails the ``fail_at``-th call of write/writelines/flush, counting from 0."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.calls = 0
        self.fail_at = fail_at

    def _tick(self) -> None:
        self.calls += 1
        if self.calls - 1 == self.fail_at:
            raise OSError(28, "No space left on device")

    def write(self, data: object) -> int:  # type: ignore[override]
        self._tick()
        return super().write(data)  # type: ignore[arg-type]

    def writelines(self, parts: object) -> None:  # type: ignore[override]
        self._tick()
        super().writelines(parts)  # type: ignore[arg-type]

    def flush(self) -> None:
        self._tick()
        super().flush()


def test_a_stream_writer_that_failed_refuses_to_go_on() -> None:
    stream = _FailingStream(fail_at=0)
    writer = tfrec.RecordWriter(stream)
    with pytest.raises(OSError):
        writer.write_many([bytes(1 << 20)] * 2)
    for again in (lambda: writer.write(b"x"), writer.flush, writer.close):
        with pytest.raises(tfrec.TfrecError, match="failed"):
            again()
