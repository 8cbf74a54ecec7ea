"""Records of many files, interleaved as tf.data's ``interleave(cycle_length, block_length)`` (data layer).

Up to ``cycle_length`` files are open at once; ``block_length`` records are
taken from each in turn. When a file runs out its slot is emptied and the turn
moves on; the next file opens in that slot when its turn comes back - the
order tf.data produces. Records are read a few hundred at a time per file and
whole rounds are interleaved with list slicing, so no Python runs per record.

A file may be a :class:`~tfrec.data.sharding.ranges.FileRange` (a path with a range of
its records, when records are split among readers): its reader starts at the
range's first record and stops at its end.

The state is small: for each open file, the byte offset and index at which its
read-ahead started and how many of those records were handed out.

Example:
    >>> records = InterleavedRecords(["a.tfrecord", "b.tfrecord"], ReadOptions(), cycle_length=2)
    >>> records.pull()   # a list of bytes: a0, b0, a1, b1, ...
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ...arguments import ON_ERROR, check_choice, check_count
from ...errors import DatasetStateError, TfrecError
from ...record import RecordReader, resolve_compression
from ...record.frame import FRAMING
from ..paths import file_size, local_path, missing_file, open_binary
from ..sharding.ranges import FileRange
from .state_check import StateField

__all__ = ["InterleavedRecords", "ReadOptions", "check_reading_state"]

RECORDS_AHEAD = 256  # records read ahead per open file
RECORDS_PER_PULL = 1024  # records handed out per pull, at least


@dataclass(frozen=True)
class ReadOptions:
    """How each file of a dataset is read: compression, checksums, damaged records, remote storage, turns.

    Frozen and picklable (reading processes receive a copy); checked when made.

    Args:
        compression: ``"auto"`` (from each file's suffix), ``None``, ``"gzip"`` or ``"zlib"``.
        verify_checksums: check both CRCs of every record.
        on_error: ``"raise"``, ``"skip"`` or ``"warn"`` on a damaged record
            (see :class:`~tfrec.RecordReader`).
        storage_options: passed to fsspec for URLs.
        block_length: consecutive records taken from a file per turn of the
            interleave (tf.data's ``block_length``; ``cycle_length`` files take turns).

    Example:
        >>> ds = tfrec.TFRecordDataset("data/*.tfrecord", read_options=tfrec.ReadOptions(on_error="skip"))
    """

    compression: str | None = "auto"
    verify_checksums: bool = True
    on_error: str = "raise"
    storage_options: Mapping[str, Any] | None = field(default=None, hash=False)
    block_length: int = 1

    def __post_init__(self) -> None:
        resolve_compression(self.compression, None)  # an unknown name fails here, not in a file
        check_choice("on_error", self.on_error, ON_ERROR)
        object.__setattr__(self, "verify_checksums", bool(self.verify_checksums))
        object.__setattr__(self, "block_length", check_count("block_length", self.block_length))

    def open(self, path: str, offset: int = 0, index: int = 0) -> tuple[RecordReader, IO[bytes] | None]:
        """A reader of ``path`` from ``offset``; and the stream to close when it is a URL."""
        path = str.__str__(path)  # a bare path, also for a FileRange: errors carry a plain str
        compression = resolve_compression(self.compression, path)
        source: str | IO[bytes] | None = local_path(path)
        stream = None
        try:
            if source is None:
                source = stream = open_binary(path, self.storage_options)
                with contextlib.suppress(AttributeError):
                    stream.name = path  # type: ignore[misc]  # errors then name the URL
            reader = RecordReader(
                source,
                compression,
                verify_checksums=self.verify_checksums,
                on_error=self.on_error,  # type: ignore[arg-type]
                start_offset=offset,
                start_index=index,
            )
        except FileNotFoundError as exc:  # listed when the dataset was made, gone now
            raise missing_file(path) from exc
        return reader, stream


class _OpenFile:
    """One file of the cycle: its reader and the records read ahead of the turn.

    A :class:`FileRange` is read from its first record up to its end; ``resume``
    (offset, index, records to skip) starts elsewhere, as saved by :meth:`state`.
    """

    def __init__(self, position: int, path: str, options: ReadOptions, resume: Sequence[int] | None = None):
        self.position = position  # the file's place in this epoch's list
        self.path = path
        piece = path if isinstance(path, FileRange) else None
        if resume is None:
            resume = (piece.offset, piece.start, 0) if piece is not None else (0, 0, 0)
        offset, index, skip = resume
        # Where the range ends: the byte offset bounds it exactly, the record number sizes read-aheads.
        self.end = piece.end if piece is not None else None
        self.stop = piece.stop if piece is not None else 0
        self.reader, self.stream = options.open(path, offset, index)
        self.records: Iterator[bytes] = iter(self.reader)
        self.ahead: list[bytes] = []
        self.taken = 0
        self.ahead_offset, self.ahead_index = offset, index
        self.error: BaseException | None = None
        if skip:
            self.refill(skip)
            self.taken = len(self.ahead)
            if self.taken < skip and self.error is None:
                self.close()
                raise DatasetStateError(
                    f"{str.__str__(path)}: the state has {skip} records handed out from offset {offset}, "
                    f"and the file holds {self.taken} there: the state or the file has changed"
                )

    @property
    def available(self) -> int:
        return len(self.ahead) - self.taken

    def refill(self, count: int = RECORDS_AHEAD) -> None:
        """Read the next records ahead; an error is kept until the records before it are handed out."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        self.ahead_offset, self.ahead_index = self.reader.offset, self.reader.index
        self.ahead, self.taken = [], 0
        count = self._within(count)
        if not count:
            return
        try:
            self.ahead.extend(itertools.islice(self.records, count))  # keeps what came before an error
        except FileNotFoundError as exc:  # opened on the first read; a MissingFileError is one too
            raise missing_file(str.__str__(self.path)) from exc
        except TfrecError as exc:
            if not self.ahead:
                raise
            self.error = exc
        if self.end is not None and self.reader.offset > self.end:
            self._trim(self.end)

    def _within(self, count: int) -> int:
        """How many of ``count`` records to read ahead without passing the end of the range."""
        if self.end is None:
            return count
        if self.reader.offset >= self.end:
            return 0
        # At least one while bytes of the range are left: skipped damage can make the numbers disagree.
        return min(count, max(1, self.stop - self.reader.index))

    def _trim(self, end: int) -> None:
        """Drop records read past the range's end (only after skipped damage shifted the record count).

        Records read after the damage lie back to back up to the reader's
        offset, so walking back from there finds the ones that start at or
        past the end: they belong to the next range.
        """
        at, keep = self.reader.offset, len(self.ahead)
        while keep and at - len(self.ahead[keep - 1]) - FRAMING >= end:
            at -= len(self.ahead[keep - 1]) + FRAMING
            keep -= 1
        del self.ahead[keep:]

    def take(self, count: int) -> list[bytes]:
        """Up to ``count`` records; fewer only when the file ends."""
        got: list[bytes] = []
        while len(got) < count:
            if not self.available:
                self.refill()
                if not self.ahead:
                    break
            n = min(count - len(got), self.available)
            got += self.ahead[self.taken : self.taken + n]
            self.taken += n
        return got

    def state(self) -> tuple[int, int, int, int]:
        return (self.position, self.ahead_offset, self.ahead_index, self.taken)

    def close(self) -> None:
        self.reader.close()
        if self.stream is not None:
            self.stream.close()


def check_reading_state(
    field: StateField, files: Sequence[str], options: ReadOptions, cycle_length: int
) -> None:
    """Check a saved :meth:`InterleavedRecords.state` against this reader's ``files``."""
    field = field.owned("reading the files").keys("next_file", "turn", "block", "end_of_input", "slots")
    next_file = field["next_file"].integer(0, len(files))
    turn = field["turn"].integer(0, cycle_length - 1)
    block = field["block"].integer(0, options.block_length - 1)
    if field["end_of_input"].boolean() and next_file < len(files):
        field["end_of_input"].fail(f"False while files are left ({next_file} of {len(files)} opened)")
    slots = field["slots"].items(cycle_length)
    if block and slots[turn].missing:
        field["block"].fail("0 while the slot whose turn it is holds no file")
    opened: set[int] = set()
    for slot in slots:
        if slot.missing:
            continue
        position, offset, index, taken = slot.items(4)
        where = position.integer(0, next_file - 1)
        if where in opened:
            position.fail("a file no other slot reads")
        opened.add(where)
        taken.integer(0, RECORDS_AHEAD)
        _check_position(offset, index, files[where], options)
    # Files open in order, each in a free slot: when the last file already done was opened, every file
    # open now and listed before it was open too, and a slot was left for it.
    done = next_file - 1
    while done in opened:
        done -= 1
    if done >= 0 and sum(p < done for p in opened) >= cycle_length:
        field["next_file"].fail(
            f"a count of files opened that leaves file {done} a slot (files {sorted(opened)}, opened "
            f"before it, are still open in all {cycle_length} slots)",
            str(next_file),
        )


def _check_position(offset: StateField, index: StateField, path: str, options: ReadOptions) -> None:
    """A saved position must lie in its file (and in its range of records, for a piece of a file)."""
    if isinstance(path, FileRange):
        offset.integer(path.offset, path.end)
        index.integer(path.start)
        return
    at = offset.integer(0)
    index.integer(0)
    if at and resolve_compression(options.compression, path) is None:  # compressed: the reader checks
        size = file_size(path, options.storage_options)
        if at > size:
            offset.fail(f"an offset within {path} ({size} bytes)", str(at))


class InterleavedRecords:
    """The records of ``files`` interleaved like tf.data; a pipeline's first stage.

    Args:
        files: this epoch's files, in reading order.
        options: how to read each file, and how many consecutive records a turn takes from one
            (``block_length``).
        cycle_length: files open at once.
        state: a :meth:`state` to resume from.
    """

    def __init__(
        self,
        files: Sequence[str],
        options: ReadOptions,
        cycle_length: int = 1,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self.files = list(files)
        self.options = options
        self.block_length = options.block_length
        self.slots: list[_OpenFile | None] = [None] * cycle_length
        self.next_file = 0
        self.turn = 0  # the slot whose turn it is
        self.block_index = 0  # records already taken from it in this turn
        self.end_of_input = False
        self.error: TfrecError | None = None
        if state is not None:
            self.next_file, self.turn, self.block_index = state["next_file"], state["turn"], state["block"]
            self.end_of_input = state["end_of_input"]
            for i, slot in enumerate(state["slots"]):
                if slot is not None:
                    position, *resume = slot
                    self.slots[i] = _OpenFile(position, self.files[position], options, resume)

    def state(self) -> dict[str, Any]:
        return {
            "next_file": self.next_file,
            "turn": self.turn,
            "block": self.block_index,
            "end_of_input": self.end_of_input,
            "slots": [slot.state() if slot is not None else None for slot in self.slots],
        }

    def pull(self) -> list[bytes]:
        """The next records (at least one); StopIteration when every file is done."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        out: list[bytes] = []
        try:
            while len(out) < RECORDS_PER_PULL and self._step(out):
                pass
        except TfrecError as exc:
            if not out:
                raise
            self.error = exc  # the records before the damage first
        if not out:
            raise StopIteration
        return out

    def _advance(self) -> None:
        self.block_index = 0
        self.turn = (self.turn + 1) % len(self.slots)

    def _step(self, out: list[bytes]) -> bool:
        """One move of tf.data's interleave (or many whole rounds at once); False when done."""
        slot = self.slots[self.turn]
        if slot is not None:
            if self.block_index == 0 and self._rounds(out):
                return True
            need = self.block_length - self.block_index
            got = slot.take(need)
            out += got
            if len(got) == need:
                self._advance()
            elif got:
                self.block_index += len(got)  # the file ended within the block: found empty next turn
            else:
                slot.close()
                self.slots[self.turn] = None
                self._advance()
            return True
        if not self.end_of_input:
            if self.next_file < len(self.files):
                self.slots[self.turn] = _OpenFile(self.next_file, self.files[self.next_file], self.options)
                self.next_file += 1
            else:
                self.end_of_input = True
            return True
        if all(s is None for s in self.slots):
            return False
        self._advance()
        return True

    def _rounds(self, out: list[bytes]) -> bool:
        """Hand out whole rounds of blocks from every open file at once, when all have them read ahead."""
        order = self.slots[self.turn :] + self.slots[: self.turn]
        open_files = [s for s in order if s is not None]
        if len(open_files) < len(order) and not self.end_of_input:
            return False  # an empty slot opens a file on its turn
        block = self.block_length
        rounds = min(f.available for f in open_files) // block
        if rounds < 1:
            return False
        size = rounds * block
        width = len(open_files)
        merged: list[bytes] = [b""] * (size * width)
        for i, f in enumerate(open_files):
            taken = f.ahead[f.taken : f.taken + size]
            f.taken += size
            if block == 1:
                merged[i::width] = taken
            else:
                for j in range(block):
                    merged[i * block + j :: width * block] = taken[j::block]
        out += merged
        return True

    def close(self) -> None:
        for slot in self.slots:
            if slot is not None:
                slot.close()
        self.slots = [None] * len(self.slots)
