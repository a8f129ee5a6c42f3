"""Readers and the work split: every row read exactly once for any number of ranks, and
every bad value located by file, line and column."""

from __future__ import annotations

import gzip
import io
import itertools
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpieval import locations, readers, split
from mpieval.errors import DataError

TYPES = {"id": "int", "pred": "float"}


@pytest.fixture
def pool_size():
    """Set pyarrow's CPU pool for a test (reads use threads when it has more than one)."""
    before = pa.cpu_count()
    yield readers.use_threads
    readers.use_threads(before)


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request, pool_size):
    """Text is streamed on one thread and read in parsed chunks on several: both ways."""
    pool_size(request.param)
    return request.param


def write_text(path: str, ids: list[int], *, sep: str = "\t", newline: str = "\n",
               final_newline: bool = True, pad: list[int] | None = None) -> None:
    """A text file with columns id, pred, note; ``pad`` makes rows of uneven length."""
    lines = [sep.join(["id", "pred", "note"])]
    for k, i in enumerate(ids):
        note = "x" * (pad[k] if pad else i % 7)
        lines.append(sep.join([str(i), f"{(i % 1000) / 1000:.3f}", note]))
    text = newline.join(lines) + (newline if final_newline else "")
    data = text.encode()
    if path.endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as out:
        out.write(data)


def write_parquet(path: str, ids: list[int], row_group_size: int) -> None:
    table = pa.table({
        "id": pa.array(ids, pa.int64()),
        "pred": pa.array([(i % 1000) / 1000 for i in ids], pa.float64()),
        "note": pa.array(["x" * (i % 7) for i in ids]),
    })
    pq.write_table(table, path, row_group_size=max(row_group_size, 1))


def inspect(path: str) -> split.InputFile:
    return readers.inspect(path, readers.file_format(path))


def read_all(files: list[split.InputFile], ranks: int, block_size: int | None = 1 << 20
             ) -> list[list[int]]:
    """The ids each rank reads."""
    plan = split.plan(files, ranks)
    seen = []
    for pieces in plan:
        ids: list[int] = []
        for piece in pieces:
            for batch in readers.read_piece(files[piece.file], piece, TYPES,
                                            block_size=block_size):
                ids.extend(batch.numbers("id").tolist())
        seen.append(ids)
    return seen


@st.composite
def file_sets(draw: st.DrawFn) -> list[tuple[str, int, dict]]:
    """(format, rows, options) of 1 to 4 files."""
    specs = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["tsv", "csv", "tsv.gz", "parquet"]))
        rows = draw(st.integers(0, 300))
        options = {
            "crlf": draw(st.booleans()),
            "final_newline": draw(st.booleans()),
            "row_group": draw(st.integers(1, 80)),
        }
        specs.append((kind, rows, options))
    return specs


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=file_sets(), ranks=st.integers(1, 7), block=st.sampled_from([1024, 4096, 1 << 20]))
def test_every_row_is_read_exactly_once(tmp_path_factory, threads, specs, ranks, block):
    root = tmp_path_factory.mktemp("files")
    files, expected, next_id = [], [], 0
    for k, (kind, rows, options) in enumerate(specs):
        ids = list(range(next_id, next_id + rows))
        next_id += rows
        path = str(root / f"part-{k}.{kind}")
        if kind == "parquet":
            write_parquet(path, ids, options["row_group"])
        else:
            write_text(path, ids, sep="," if kind == "csv" else "\t",
                       newline="\r\n" if options["crlf"] else "\n",
                       final_newline=options["final_newline"] or not ids)
        files.append(inspect(path))
        expected.extend(ids)
    seen = read_all(files, ranks, block)
    flat = [i for ids in seen for i in ids]
    assert sorted(flat) == expected  # each row once: no loss, no duplicate
    assert len(seen) == ranks


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final_newline", [True, False])
def test_a_cut_at_any_byte_splits_the_rows_exactly(tmp_path, threads, newline, final_newline):
    path = str(tmp_path / "cut.tsv")
    write_text(path, list(range(12)), newline=newline, final_newline=final_newline,
               pad=[0, 3, 0, 0, 9, 1, 0, 2, 0, 0, 5, 0])
    file = inspect(path)
    for cut in range(file.size + 1):
        halves = []
        for start, stop in ((0, cut), (cut, file.size)):
            piece = split.Piece(0, start, stop)
            halves.append([i for b in readers.read_piece(file, piece, TYPES)
                           for i in b.numbers("id").tolist()])
        assert halves[0] + halves[1] == list(range(12)), cut


def test_line_start_at_moves_a_cut_to_the_next_line_start():
    text = b"id\tpred\n1\t0.5\n22\t0.25\n\n333\t1\n"
    starts = [0] + [k + 1 for k, byte in enumerate(text) if byte == ord("\n")]
    data_start = starts[1]
    handle = io.BytesIO(text)
    for offset in range(-1, len(text) + 2):
        want = next((s for s in starts if s >= max(offset, data_start)), len(text))
        assert readers.line_start_at(handle, offset, data_start, len(text)) == want, offset


def test_count_lines_before_counts_newlines_before_an_offset():
    text = b"a\nbb\n\nccc\n"
    handle = io.BytesIO(text)
    for offset in range(len(text) + 3):
        assert readers.count_lines_before(handle, offset) == text[:offset].count(b"\n")


def test_one_large_file_spreads_over_every_rank(tmp_path, threads):
    path = str(tmp_path / "big.tsv")
    write_text(path, list(range(20_000)))
    for ranks in (2, 3, 5):
        seen = read_all([inspect(path)], ranks, block_size=4096)
        assert all(len(ids) > 20_000 // ranks // 2 for ids in seen)
        assert sorted(i for ids in seen for i in ids) == list(range(20_000))


def test_plan_ignores_the_order_files_are_given_in(tmp_path):
    paths = []
    for k in range(4):
        paths.append(str(tmp_path / f"p{k}.tsv"))
        write_text(paths[-1], list(range(k * 100, k * 100 + 50 + 30 * k)))
    files = [inspect(p) for p in paths]
    forward = split.plan(files, 3)
    backward = split.plan(files[::-1], 3)
    as_paths = [[(files[p.file].path, p.start, p.stop) for p in r] for r in forward]
    reversed_files = files[::-1]
    as_paths_back = [[(reversed_files[p.file].path, p.start, p.stop) for p in r]
                     for r in backward]
    assert as_paths == as_paths_back


def test_uncuttable_units_go_whole_to_one_rank(tmp_path):
    gz, pqt = str(tmp_path / "a.tsv.gz"), str(tmp_path / "b.parquet")
    write_text(gz, list(range(500)))
    write_parquet(pqt, list(range(500, 1500)), 100)
    files = [inspect(gz), inspect(pqt)]
    assert files[0].gzip and not files[0].splittable
    assert len(files[1].row_groups) == 10
    plan = split.plan(files, 4)
    gz_pieces = [p for r in plan for p in r if p.file == 0]
    assert gz_pieces == [split.Piece(0, 0, 1)]
    groups = sorted(g for r in plan for p in r if p.file == 1 for g in range(p.start, p.stop))
    assert groups == list(range(10))


def test_header_is_read_once_and_never_as_data(tmp_path):
    path = str(tmp_path / "h.csv")
    with open(path, "w") as out:
        out.write('"id","pred",note\n1,0.5,a\n2,0.25,b\n')
    file = inspect(path)
    assert file.columns == ("id", "pred", "note")
    assert file.data_start == len('"id","pred",note\n')
    for ranks in (1, 2, 3):
        assert sorted(i for ids in read_all([file], ranks) for i in ids) == [1, 2]


def test_header_only_file_has_no_rows(tmp_path):
    path = str(tmp_path / "h.tsv")
    write_text(path, [])
    assert read_all([inspect(path)], 2) == [[], []]


# -- errors: file, line, column --------------------------------------------------------


def bad_file(tmp_path, name: str, line: int, text: str, rows: int = 3000) -> str:
    """A file of ``rows`` data rows whose line ``line`` (1-based, header = 1) is ``text``."""
    path = str(tmp_path / name)
    lines = ["id\tpred\tnote"] + [f"{i}\t0.5\tn" for i in range(rows)]
    lines[line - 1] = text
    data = ("\n".join(lines) + "\n").encode()
    with open(path, "wb") as out:
        out.write(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("name", ["part-3.tsv", "part-3.tsv.gz"])
@pytest.mark.parametrize(("text", "message"), [
    ("7\tabc\tn", "{name}:{line}: column pred: 'abc' is not a number"),
    ("7\t\tn", "{name}:{line}: column pred: empty value where a number is expected"),
    ("x7\t0.5\tn", "{name}:{line}: column id: 'x7' is not an integer"),
    ("7\t0.5", "{name}:{line}: column note: missing: the line has 2 of the 3 columns"),
    ("7\t0.5\tn\t8", "{name}:{line}: the line has 4 columns, the header 3"),
    ("", "{name}:{line}: empty line: every line after the header holds a row"),
])
def test_bad_values_are_located(tmp_path, threads, ranks, name, text, message):
    line = 2042
    path = bad_file(tmp_path, name, line, text)
    file = inspect(path)
    with pytest.raises(DataError) as caught:
        read_all([file], ranks, block_size=4096)
    assert str(caught.value).startswith(message.format(name=path, line=line))


def test_batch_rows_know_their_lines(tmp_path, threads):
    path = bad_file(tmp_path, "ok.tsv", 5, "4\t0.5\tn", rows=5000)
    file = inspect(path)
    for ranks in (1, 3):
        for pieces in split.plan([file], ranks):
            for piece in pieces:
                for batch in readers.read_piece(file, piece, TYPES, block_size=2048):
                    ids = batch.numbers("id")
                    for row in (0, batch.rows - 1):
                        # row i (0-based) of the data is on line i + 2
                        assert batch.where(row) == f"{path}:{int(ids[row]) + 2}"


@pytest.mark.parametrize(("content", "message"), [
    (b"", "{path}:1: empty file (no header line)"),
    (b"\n1\t2\n", "{path}:1: empty header line"),
])
@pytest.mark.parametrize("gzipped", [False, True])
def test_empty_files(tmp_path, content, message, gzipped):
    path = str(tmp_path / ("e.tsv.gz" if gzipped else "e.tsv"))
    with open(path, "wb") as out:
        out.write(gzip.compress(content) if gzipped else content)
    with pytest.raises(DataError, match="^" + re.escape(message.format(path=path))):
        inspect(path)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(DataError, match=r"nope\.tsv: cannot read: No such file"):
        inspect(str(tmp_path / "nope.tsv"))
    if os.geteuid() != 0:  # root reads anything
        path = str(tmp_path / "locked.tsv")
        write_text(path, [1])
        os.chmod(path, 0)
        with pytest.raises(DataError, match=r"locked\.tsv: cannot read"):
            inspect(path)
    with pytest.raises(DataError, match="not a regular file"):
        readers.inspect(str(tmp_path), "tsv")


def test_a_local_file_is_looked_at_as_pyarrows_local_file_system_sees_it(tmp_path):
    """Local files are looked at and opened without ``pyarrow.fs``; what they are and
    what they read is what its ``LocalFileSystem`` says."""
    import pyarrow.fs as pafs

    (tmp_path / "f.tsv").write_bytes(b"pred\tlabel\n0.5\t1\n")
    (tmp_path / "link.tsv").symlink_to(tmp_path / "f.tsv")
    (tmp_path / "dangling.tsv").symlink_to(tmp_path / "gone.tsv")
    os.mkfifo(tmp_path / "pipe")
    kinds = {pafs.FileType.File: "file", pafs.FileType.Directory: "directory",
             pafs.FileType.NotFound: "missing", pafs.FileType.Unknown: "other"}
    local = pafs.LocalFileSystem()
    for name in ["f.tsv", "link.tsv", "dangling.tsv", "gone.tsv", "f.tsv/x", ".", "pipe"]:
        path = str(tmp_path / name)
        location = locations.locate(path)
        assert location.store is None and not location.remote
        info = local.get_file_info(path)
        want = (kinds[info.type], info.size if info.type == pafs.FileType.File else 0)
        assert locations.file_type(location) == want, name
        assert locations.file_type(locations.locate("file://" + path)) == want, name
    with locations.open_input_file(locations.locate(str(tmp_path / "link.tsv"))) as handle:
        assert handle.size() == 17 and handle.read_at(3, 14) == b"\t1\n"


def test_missing_column_names_the_header_line(tmp_path):
    path = str(tmp_path / "m.tsv")
    write_text(path, [1, 2])
    file = inspect(path)
    with pytest.raises(DataError, match=r"m.tsv:1: column label: not in the header"):
        readers.check_columns(file, {"pred": "pred of auc", "label": "label of auc"})


def test_format_from_the_name():
    assert readers.file_format("a/b.tsv") == "tsv"
    assert readers.file_format("b.csv.gz") == "csv"
    assert readers.file_format("b.PARQUET") == "parquet"
    assert readers.file_format("b.txt", "tsv") == "tsv"
    with pytest.raises(DataError, match="pass --format"):
        readers.file_format("b.txt")


def test_parquet_nulls_and_types_are_errors(tmp_path):
    path = str(tmp_path / "n.parquet")
    pq.write_table(pa.table({"id": [1, 2, None], "pred": ["a", "b", "c"]}), path)
    file = inspect(path)
    piece = split.Piece(0, 0, 1)
    with pytest.raises(DataError, match=r"n.parquet: row 3: column id: null value"):
        list(readers.read_piece(file, piece, {"id": "int"}))
    with pytest.raises(DataError, match=r"column pred: has type string, not a number"):
        list(readers.read_piece(file, piece, {"pred": "float"}))


def test_parquet_rows_know_their_numbers(tmp_path):
    path = str(tmp_path / "r.parquet")
    write_parquet(path, list(range(1000)), 300)
    file = inspect(path)
    for pieces in split.plan([file], 3):
        for piece in pieces:
            for batch in readers.read_piece(file, piece, TYPES):
                ids = batch.numbers("id")
                assert batch.where(batch.rows - 1) == f"{path}: row {int(ids[-1]) + 1}"


def test_ids_are_text_whatever_the_format(tmp_path):
    """A uid 7 in a Parquet int column is the uid 7 of a text file (one user): the keys
    and checks of its text, hashed from the integers (no text made), and ``-7`` that of
    ``-7``."""
    from mpieval.keys import HashedIds, uid_keys_checked

    values = [7, 70, 123456789012, -7, 0]
    tsv, pqt = str(tmp_path / "a.tsv"), str(tmp_path / "b.parquet")
    write_text(tsv, values)
    write_parquet(pqt, values, 2)
    keys = []
    for path in (tsv, pqt):
        file = inspect(path)
        stop = len(file.row_groups) if file.format == "parquet" else file.size
        batches = list(readers.read_piece(file, split.Piece(0, 0, stop), {"id": "string"}))
        ids = [b.keys("id") for b in batches]
        assert all(isinstance(i, HashedIds) == (path == pqt) for i in ids)
        hashed = [uid_keys_checked("id", i) for i in ids]
        keys.append((np.concatenate([k for k, _ in hashed]).tolist(),
                     np.concatenate([c for _, c in hashed]).tolist()))
    assert keys[0] == keys[1]
    assert keys[0] == tuple(a.tolist() for a in uid_keys_checked("id", np.array(
        [str(v).encode() for v in values])))  # (the bytes of the text)


# -- plain text in chunks, parsed with threads ----------------------------------------


def test_a_line_longer_than_a_block_reads_on_several_threads(tmp_path, pool_size):
    """A 3 MB line: longer than the 1 MiB blocks a chunk is parsed in."""
    pool_size(2)
    path = str(tmp_path / "wide.tsv")
    pad = [4] * 30
    pad[11] = 3_000_000
    write_text(path, list(range(30)), pad=pad)
    assert read_all([inspect(path)], 1, block_size=None) == [list(range(30))]


@pytest.mark.parametrize("name", ["wide.tsv", "wide.tsv.gz"])
@pytest.mark.parametrize("long_rows", [[11], [0], [29], [3, 4, 20]])
def test_a_line_longer_than_two_streaming_blocks_reads(tmp_path, pool_size, name, long_rows):
    """Lines of 20 kB and 200 kB against 4 KiB blocks (each spans more than two): the
    piece is read again in larger blocks, every row once, and a bad value after them
    is still named by its line."""
    pool_size(1)
    path = str(tmp_path / name)
    pad = [4] * 30
    for row in long_rows:
        pad[row] = 20_000 if row % 2 else 200_000
    write_text(path, list(range(30)), pad=pad)
    assert read_all([inspect(path)], 1, block_size=4096) == [list(range(30))]
    three = read_all([inspect(path)], 3, block_size=4096)
    assert [i for ids in three for i in ids] == list(range(30))
    piece = split.Piece(0, 0, 1 if name.endswith(".gz") else os.path.getsize(path))
    batches = list(readers.read_piece(inspect(path), piece, TYPES, block_size=4096))
    want = os.path.getsize(path) - (0 if name.endswith(".gz") else inspect(path).data_start)
    assert sum(batch.bytes for batch in batches) == want
    assert all(batch.bytes >= 0 for batch in batches)
    bad = tmp_path / ("bad.tsv.gz" if name.endswith(".gz") else "bad.tsv")
    text = gzip.decompress(open(path, "rb").read()) if name.endswith(".gz") else \
        open(path, "rb").read()
    text = text.replace(b"\n25\t0.025\t", b"\n25\tabc\t")  # line 27
    bad.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    with pytest.raises(DataError, match=f"^{re.escape(str(bad))}:27: column pred: 'abc'"):
        read_all([inspect(str(bad))], 1, block_size=4096)


def test_a_line_longer_than_a_chunk_is_read_whole(tmp_path, pool_size):
    pool_size(2)
    path = str(tmp_path / "long.tsv")
    pad = [5] * 40
    pad[17] = 50_000  # one line of 50 kB against chunks of 1 kB
    write_text(path, list(range(40)), pad=pad)
    file = inspect(path)
    for ranks in (1, 2, 3):
        seen = read_all([file], ranks, block_size=1024)
        assert sorted(i for ids in seen for i in ids) == list(range(40))


@pytest.mark.parametrize("name", ["big.tsv", "big.csv", "big.tsv.gz"])
def test_threads_change_neither_rows_nor_error_lines(tmp_path, pool_size, name):
    """A chunk of several pyarrow blocks is parsed in parallel; a bad value in a late
    block is still named by its line (the chunk is parsed again on one thread)."""
    rows = 160_000  # about 2 MB: two 1 MiB blocks in one 16 MiB chunk
    good = bad_file(tmp_path, "good-" + name, 2, "0\t0.5\tn", rows=rows)  # line 2 as it is
    line = 150_007
    bad = bad_file(tmp_path, name, line, "7\tabc\tn", rows=rows)
    if name.endswith(".csv"):
        for path in (good, bad):
            with open(path) as handle:
                text = handle.read().replace("\t", ",")
            with open(path, "w") as out:
                out.write(text)
    reads = {}
    for threads in (1, 2):
        pool_size(threads)
        reads[threads] = read_all([inspect(good)], 1, block_size=16 << 20)
        with pytest.raises(DataError) as caught:
            read_all([inspect(bad)], 1, block_size=16 << 20)
        assert str(caught.value) == f"{bad}:{line}: column pred: 'abc' is not a number"
    assert reads[1] == reads[2] == [list(range(rows))]


def test_a_piece_left_early_leaves_no_read_ahead_running(tmp_path, pool_size):
    """The chunked reader parses the next chunk on a thread of its own while the caller
    uses this one: an iterator closed after its first batch waits for that parse, ends
    the thread and closes the file."""
    import threading

    pool_size(2)  # the chunked reader (one thread streams instead)
    path = str(tmp_path / "many.tsv")
    write_text(path, list(range(3000)))
    file = inspect(path)
    piece = split.Piece(0, file.data_start, os.path.getsize(path))
    batches = readers.read_piece(file, piece, TYPES, block_size=4096)
    first = next(batches)
    assert first.rows < 3000  # more chunks were coming
    assert any(t.name.startswith("mpieval-read") for t in threading.enumerate())
    batches.close()
    assert not any(t.name.startswith("mpieval-read") for t in threading.enumerate())


def test_batches_kept_stay_whole_while_their_read_buffers_are_reused(
        tmp_path, pool_size) -> None:
    """Chunks of text are read into one buffer, reused: batches kept after the read (all
    of them, here) still hold their own values, strings too, and a line longer than the
    chunk grows the buffer."""
    pool_size(2)
    path = str(tmp_path / "rows.tsv")
    ids = list(range(3000))
    pad = [5000 if i == 1700 else i % 40 for i in ids]  # one line longer than a chunk
    write_text(path, ids, pad=pad)
    file = inspect(path)
    (piece,) = split.plan([file], 1)[0]
    types = {"id": "int", "note": "string"}
    batches = list(readers.read_piece(file, piece, types, block_size=1024))
    assert len(batches) > 10
    got_ids = [i for batch in batches for i in batch.numbers("id").tolist()]
    notes = [note for batch in batches for note in batch.keys("note").to_pylist()]
    assert got_ids == ids
    assert notes == ["x" * width for width in pad]


# -- tags: a column of few values, coded from its text ------------------------------------

TAGS = ("feed", "search", "video", "a-tag-longer-than-a-word", "é漢字", "feed2")


def tag_rows(n: int, segment: int, seed: int = 3) -> list[str]:
    """``n`` tags in segments of ``segment`` rows, each segment opening with the tags in
    another order (so batches meet them in different orders of first appearance)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    tags = []
    for start in range(0, n, segment):
        order = [TAGS[k] for k in rng.permutation(len(TAGS))]
        rest = [TAGS[k] for k in rng.integers(0, len(TAGS), segment)]
        tags += (order + rest)[: min(segment, n - start)]
    return tags


def write_tagged(path: str, tags: list[str]) -> None:
    """Columns id, uid, pred, label, tag (text, or a Parquet string column)."""
    n = len(tags)
    columns = {
        "id": list(range(n)),
        "uid": [f"u{(i * 7) % 97}" for i in range(n)],
        "pred": [((i * 37) % 1000) / 1000 for i in range(n)],
        "label": [float((i * 11) % 3 == 0) for i in range(n)],
        "tag": tags,
    }
    if path.endswith(".parquet"):
        pq.write_table(pa.table(columns), path, row_group_size=700)
        return
    with open(path, "w", encoding="utf-8") as out:
        out.write("\t".join(columns) + "\n")
        for row in zip(*columns.values(), strict=True):
            out.write("\t".join(str(value) for value in row) + "\n")


TAG_TYPES = {"id": "int", "uid": "string", "pred": "float", "label": "float", "tag": "name"}


def whole(file: split.InputFile) -> split.Piece:
    return split.Piece(0, 0, len(file.row_groups) if file.format == "parquet" else file.size)


@pytest.mark.parametrize("name", ["t.tsv", "t.parquet"])
def test_tags_read_as_their_text_whatever_the_batches(tmp_path, threads, name, monkeypatch):
    """Each batch's tag codes (uint16, into values in order of first appearance, which
    differs from batch to batch) stand for the file's tags, and so do the metric's codes
    (:class:`TagCodes`) over the batches, cut small or not, a chunk of text parsed in
    one block or several (each coded, then their codes merged)."""
    import numpy as np

    from mpieval.tags import TagCodes

    tags = tag_rows(6000, 400)
    path = str(tmp_path / name)
    write_tagged(path, tags)
    file = inspect(path)
    orders = set()
    monkeypatch.setattr(readers.text, "PARALLEL_BLOCK_BYTES", 4096)  # 1 to 5 blocks a chunk
    for block_size in (2048, 20000, None):
        seen = TagCodes()
        read = []
        for batch in readers.read_piece(file, whole(file), TAG_TYPES, block_size=block_size):
            ids = batch.numbers("id")
            coded = batch.names("tag")
            assert coded.codes.dtype == np.uint16
            assert [coded.values[c] for c in coded.codes.tolist()] == [tags[i] for i in ids]
            assert list(coded.values) == list(dict.fromkeys(tags[i] for i in ids))
            orders.add(coded.values)
            codes = seen.codes(*seen.check(coded, batch.rows))
            read += [seen.values[c] for c in codes.tolist()]
        assert read == tags
    assert len(orders) > 2  # the batches met the tags in different orders


@pytest.mark.parametrize("text_type", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("sizes", [[], [5], [1, 2, 3, 0, 4], [0, 2, 7]])
def test_a_chunked_tag_column_is_coded_as_its_chunks_together(sizes, text_type):
    """Text parsed in blocks (a chunked column of chunks of ``sizes`` rows, and the
    rest): the codes, first rows and values of the whole column, whatever the order of
    first appearance in each chunk; values of several UTF-8 bytes a character decoded
    (32- and 64-bit offsets)."""
    import numpy as np

    tags = ["b", "a", "b", "", "c", "é", "dd", "c", "b", "日本語", "a", "", "🙂", "b"]
    cuts = [*np.cumsum([0, *sizes]).tolist(), len(tags)]
    chunked = pa.chunked_array([pa.array(tags[a:b], text_type)
                                for a, b in itertools.pairwise(cuts)],
                               text_type)
    assert chunked.num_chunks == len(sizes) + 1
    found = readers.batches.names_coded(chunked)
    assert found is not None
    codes, first_rows, values = found
    want = list(dict.fromkeys(tags))
    assert values == want
    assert first_rows.tolist() == [tags.index(value) for value in want]
    assert codes.dtype == np.uint16 and codes.tolist() == [want.index(t) for t in tags]


def test_tag_results_do_not_depend_on_the_batches(tmp_path, threads):
    """wuauc fed a file's batches (tags coded a batch at a time) gives the result of the
    whole columns in one update."""
    import numpy as np

    from mpieval.comm import Comm
    from mpieval.kinds.wuauc.metric import WuaucMetric

    tags = tag_rows(5000, 300, seed=4)
    path = str(tmp_path / "t.tsv")
    write_tagged(path, tags)
    file = inspect(path)
    results = []
    for block_size in (1024, 4096, None):
        metric = WuaucMetric(comm=Comm.local())
        for batch in readers.read_piece(file, whole(file), TAG_TYPES, block_size=block_size):
            metric.update(batch.keys("uid"), batch.numbers("pred"), batch.numbers("label"),
                          batch.names("tag"))
        results.append(metric.compute().to_dict())
    n = len(tags)
    plain = WuaucMetric(comm=Comm.local())
    plain.update(np.array([f"u{(i * 7) % 97}" for i in range(n)]),
                 np.array([((i * 37) % 1000) / 1000 for i in range(n)]),
                 np.array([float((i * 11) % 3 == 0) for i in range(n)]), np.array(tags))
    assert results[0] == results[1] == results[2] == plain.compute().to_dict()


def test_rows_taken_from_coded_tags_drop_the_values_they_do_not_use(tmp_path):
    """A filter's rows of a batch's tags (``Coded[rows]``) are checked as a user's codes:
    a value no kept row holds is no tag."""
    import numpy as np

    from mpieval.tags import TagCodes

    tags = tag_rows(500, 500)
    path = str(tmp_path / "t.tsv")
    write_tagged(path, tags)
    file = inspect(path)
    (batch,) = readers.read_piece(file, whole(file), TAG_TYPES)
    coded = batch.names("tag")
    keep = np.array([tag != "video" for tag in tags])
    distinct, inverse = TagCodes().check(coded[keep], int(keep.sum()))
    assert "video" not in distinct
    assert [distinct[i] for i in inverse.tolist()] == [t for t in tags if t != "video"]


@pytest.mark.parametrize("count", [65535, 70000])
def test_more_distinct_tags_in_a_batch_than_its_codes_hold_are_coded_whole(tmp_path, count):
    """More distinct tags in a batch than the reader's uint16 codes hold (70000: coded by a
    dictionary instead) or just as many (65535): every value coded as it is, never codes
    wrapped round."""
    from mpieval.tags import TagCodes

    tags = [f"t{k}" for k in range(count)]
    path = str(tmp_path / "many.tsv")
    write_tagged(path, tags)
    file = inspect(path)
    (batch,) = readers.read_piece(file, whole(file), TAG_TYPES, block_size=64 << 20)
    coded = batch.names("tag")
    assert list(coded.values) == tags
    codes = TagCodes()
    local = codes.codes(*codes.check(coded, batch.rows))
    assert [codes.values[c] for c in local.tolist()] == tags


@pytest.mark.parametrize("newline_at", [None, 10, 200_000, 299_999])
def test_the_last_line_end_is_found_from_the_end(newline_at) -> None:
    """In growing windows from the end: a line end far before it, just before it, or none."""
    data = bytearray(b"x" * 300_000)
    if newline_at is not None:
        data[newline_at] = ord("\n")
    buffer = pa.py_buffer(bytes(data) + b"\n" * 10)  # past the size looked at: not seen
    expected = 0 if newline_at is None else newline_at + 1
    assert readers.text._last_line_end(buffer, 300_000) == expected


def test_texts_are_decoded_from_their_offsets_and_checked_against_the_data():
    """The compiled decoding of a string column's values (``_core.text.texts``): each
    value between its offsets, and offsets outside the data an error, not a read past it."""
    import numpy as np

    from mpieval import _core

    data = np.frombuffer("aé日🙂".encode(), dtype=np.uint8)
    starts, stops = np.array([0, 1, 3, 0, 6]), np.array([1, 3, 6, 0, 10])
    assert _core.text.texts(data, starts, stops) == ["a", "é", "日", "", "🙂"]
    for bad in ([0, 11], [2, 1], [-1, 1]):
        with pytest.raises(ValueError):
            _core.text.texts(data, np.array(bad[:1]), np.array(bad[1:]))
