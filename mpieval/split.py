"""How input files are spread over ranks so that every row is read exactly once.

The files are laid end to end, sorted by path (so the plan does not depend on the
order they were given in), as one line of *work* measured in bytes; rank ``r`` of
``n`` takes the stretch ``[r W / n, (r + 1) W / n)`` of it. Within that stretch:

- an uncompressed text file is cut anywhere: a rank reads the lines whose first byte
  lies in its byte range (the reader moves a cut to the next line start,
  :func:`mpieval.readers.line_start_at`; the header line is never data), so one large
  file spreads over every rank;
- a Parquet file is cut between row groups, a gzip file not at all: such a unit goes
  to the rank whose stretch holds its midpoint.

Pure: no I/O and no MPI here (the reader aligns the cuts, the pipeline shares the plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TEXT_FORMATS = ("tsv", "csv")
FORMATS = (*TEXT_FORMATS, "parquet")


@dataclass(frozen=True)
class InputFile:
    """One input file as the planner sees it.

    ``data_start`` is the byte offset of the first data line of an uncompressed text
    file (just past the header line); ``row_groups`` holds ``(rows, bytes)`` of each
    Parquet row group. ``path`` is the file as shown in messages (a URI's secrets
    redacted); ``source``, when set, is where to open it (the URI as given).
    """

    path: str
    format: str
    size: int
    columns: tuple[str, ...]
    gzip: bool = False
    data_start: int = 0
    row_groups: tuple[tuple[int, int], ...] = ()
    source: str = ""

    @property
    def splittable(self) -> bool:
        """Whether the file can be cut at any byte (uncompressed text)."""
        return self.format in TEXT_FORMATS and not self.gzip

    @property
    def weight(self) -> int:
        """Bytes of work the file stands for."""
        if self.splittable:
            return self.size - self.data_start
        if self.format == "parquet":
            return sum(size for _, size in self.row_groups)
        return self.size


@dataclass(frozen=True)
class Piece:
    """A part of one file for one rank.

    Text: the lines starting in the byte range ``[start, stop)``; Parquet: row groups
    ``start`` to ``stop - 1``; gzip text: the whole file (``start = 0, stop = 1``).
    """

    file: int
    start: int
    stop: int


def plan(files: Sequence[InputFile], ranks: int) -> list[list[Piece]]:
    """The pieces of each of ``ranks`` ranks; ``Piece.file`` indexes ``files``."""
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    order = sorted(range(len(files)), key=lambda i: files[i].path)
    total = sum(files[i].weight for i in order)
    bounds = [total * r // ranks for r in range(ranks + 1)]
    pieces: list[list[Piece]] = [[] for _ in range(ranks)]
    offset = 0  # where the current file starts on the line of work
    for index in order:
        file = files[index]
        if file.splittable:
            for rank in range(ranks):
                lo = max(bounds[rank], offset)
                hi = min(bounds[rank + 1], offset + file.weight)
                if lo < hi:
                    base = file.data_start - offset
                    pieces[rank].append(Piece(index, base + lo, base + hi))
        elif file.format == "parquet":
            unit_offset = offset
            for group, (_, size) in enumerate(file.row_groups):
                rank = _owner(bounds, unit_offset, size)
                mine = pieces[rank]
                if mine and mine[-1].file == index and mine[-1].stop == group:
                    mine[-1] = Piece(index, mine[-1].start, group + 1)
                else:
                    mine.append(Piece(index, group, group + 1))
                unit_offset += size
        else:
            pieces[_owner(bounds, offset, file.weight)].append(Piece(index, 0, 1))
        offset += file.weight
    return pieces


def _owner(bounds: Sequence[int], start: int, size: int) -> int:
    """The rank whose stretch holds the midpoint of an uncuttable unit."""
    middle = start + size // 2
    ranks = len(bounds) - 1
    for rank in range(ranks):
        if middle < bounds[rank + 1]:
            return rank
    return ranks - 1
