"""Issue 11, in process at one rank: odd files, bounds and flag values, masked arrays.
(Interrupts and multi-rank runs: test_robust_mpi.py.)"""

from __future__ import annotations

import gzip
import json
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from kinds import NAMES, fixture
from test_cli import metrics_json, rows, run, write

from mpieval import Evaluator, pipeline, readers, split, validation
from mpieval.comm import Comm
from mpieval.errors import InputError, UndefinedMetricWarning
from mpieval.kinds import KINDS


def _json(tmp_path, capsys, *argv: str) -> dict:
    out = tmp_path / "run.json"
    status, _, err = run(capsys, "eval", "--json", out, *argv)
    assert status == 0, err
    return metrics_json(out)


# -- 2. line endings ---------------------------------------------------------------------


def test_cr_only_line_endings_are_an_error_naming_the_file(tmp_path, capsys):
    data = rows(3000)
    lf = write(str(tmp_path / "lf.tsv"), data)
    body = open(lf, "rb").read()
    (tmp_path / "crlf.tsv").write_bytes(body.replace(b"\n", b"\r\n"))
    cr = tmp_path / "cr.tsv"
    cr.write_bytes(body.replace(b"\n", b"\r"))
    (tmp_path / "cr.tsv.gz").write_bytes(gzip.compress(body.replace(b"\n", b"\r")))
    assert _json(tmp_path, capsys, lf) == _json(tmp_path, capsys, tmp_path / "crlf.tsv")
    for path in (cr, tmp_path / "cr.tsv.gz"):
        status, out, err = run(capsys, "eval", path)
        assert status == 2 and out == ""
        assert err.strip() == (f"mpieval: error: {path}: lines end with a carriage return "
                               "only (CR, old Mac line endings): convert them to LF or CRLF")


# -- 3. corrupt gzip ---------------------------------------------------------------------


def _text(n: int) -> bytes:
    return b"pred\tlabel\n" + b"".join(b"0.%d\t%d\n" % (i % 97, i % 2) for i in range(n))


@pytest.mark.parametrize("threads", [1, 2])
def test_corrupt_gzip_is_one_line_exit_2_naming_the_file(tmp_path, capsys, threads):
    readers.use_threads(threads)
    try:
        packed = gzip.compress(_text(300_000))
        head = bytearray(packed)
        head[10:40] = b"\xff" * 30  # valid magic, bad deflate data from the start
        middle = bytearray(packed)
        middle[len(packed) // 2: len(packed) // 2 + 64] = bytes(64)
        cases = {"head.tsv.gz": bytes(head), "middle.tsv.gz": bytes(middle),
                 "short.tsv.gz": packed[: len(packed) * 2 // 3]}
        for name, content in cases.items():
            path = tmp_path / name
            path.write_bytes(content)
            status, out, err = run(capsys, "eval", path)
            assert status == 2 and out == "", err
            assert err.count("\n") == 1 and "Traceback" not in err, err
            assert err.startswith(f"mpieval: error: {path}") and "bad gzip data" in err, err
        # the damage is named by the line decompression reached, the same every time
        first = run(capsys, "eval", tmp_path / "middle.tsv.gz")[2]
        assert first == run(capsys, "eval", tmp_path / "middle.tsv.gz")[2]
        assert f"{tmp_path / 'middle.tsv.gz'}:" in first
    finally:
        readers.use_threads(1)


# -- 4. table size -------------------------------------------------------------------------


def test_a_huge_table_size_is_a_usage_error_with_its_limit(tmp_path, capsys):
    path = write(str(tmp_path / "a.tsv"), rows(100))
    status, out, err = run(capsys, "eval", "--table-size", "100000000000", path)
    assert status == 2 and out == ""
    assert "--table-size: must be at most 134,217,728" in err and "Traceback" not in err
    with pytest.raises(InputError, match="at most 134,217,728"):
        KINDS["auc"].build({"table_size": 10**11}, None)
    assert validation.auc_table_size("t", validation.MAX_TABLE_SIZE) == 2**27


# -- 5. progress -----------------------------------------------------------------------------


@pytest.mark.parametrize("names", [["a.tsv", "b.tsv.gz"], ["a.parquet"]])
def test_batches_add_up_to_the_bytes_of_the_job(tmp_path, names):
    """The bytes the batches report (what --progress sums over ranks) add up to the job's
    total whatever the split, also when the reader reads ahead while a batch is used."""
    data = rows(150_000)
    paths = [write(str(tmp_path / name), data, row_group=7000) for name in names]
    files = [readers.inspect(p, readers.file_format(p)) for p in paths]
    total = sum(f.weight for f in files)
    for ranks in (1, 2, 3):
        done = 0
        for pieces in split.plan(files, ranks):
            for piece in pieces:
                for batch in readers.read_piece(files[piece.file], piece, {"pred": "float"},
                                                block_size=1 << 16):
                    done += batch.bytes
                    time.sleep(0.002)  # the metrics' work: pyarrow reads ahead meanwhile
        assert done == total, ranks


def test_progress_ends_at_100_percent(tmp_path, capsys):
    path = write(str(tmp_path / "a.tsv"), rows(50_000))
    status, _, err = run(capsys, "eval", "--progress", path)
    assert status == 0 and err.rstrip().endswith("(100%)"), err


# -- 6. quoted TSV -------------------------------------------------------------------------


def test_quoted_tsv_from_pyarrow_reads_as_quoted_csv(tmp_path, capsys):
    data = rows(2000)
    table = pa.table(data)
    pacsv.write_csv(table, tmp_path / "q.tsv", write_options=pacsv.WriteOptions(delimiter="\t"))
    pacsv.write_csv(table, tmp_path / "q.csv")
    assert b'"pred"' in (tmp_path / "q.tsv").read_bytes()
    args = ("--metrics", "auc,wuauc", "--tag", "tag")
    assert _json(tmp_path, capsys, *args, tmp_path / "q.tsv") == \
        _json(tmp_path, capsys, *args, tmp_path / "q.csv")


# -- 7. what a number may look like; names and tags in the log line ------------------------

ACCEPTED = {  # written -> read
    "0.5": 0.5, " 0.5": 0.5, "0.5 ": 0.5, "\t0.5": None, '"0.5"': 0.5, "+0.5": 0.5,
    "5e-1": 0.5, "5E-1": 0.5, ".5": 0.5, "1.": 1.0, "-0": 0.0,
}
REFUSED = ["0,5", "0.5x", "0x1", "1_0", "", "nan", "inf", "-inf", "NaN"]


@pytest.mark.parametrize("threads", [1, 2])
def test_numbers_read_as_the_readme_says(tmp_path, capsys, threads):
    """Spaces around a number and CSV quotes are not part of it; exponents and signs are;
    nan and inf are numbers that the checks then refuse; anything else is refused."""
    readers.use_threads(threads)
    try:
        for written, value in ACCEPTED.items():
            if value is None:  # a tab is the TSV delimiter
                continue
            path = tmp_path / "n.csv"
            path.write_text(f"pred,label\n{written},1\n0.25,0\n")
            got = _json(tmp_path, capsys, "--table-size", "4", path)["auc"]
            assert got["predicted_ctr"] == pytest.approx((value + 0.25) / 2), written
        for written in REFUSED:
            path = tmp_path / "n.csv"
            path.write_text(f'pred,label\n"{written}",1\n0.25,0\n'.replace('"', "")
                            if "," not in written else f'pred,label\n"{written}",1\n')
            status, _, err = run(capsys, "eval", path)
            assert status == 2 and "n.csv:2: column pred:" in err, (written, err)
    finally:
        readers.use_threads(1)


def test_parquet_numbers_must_be_numeric_columns(tmp_path, capsys):
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"pred": [" 0.5", "0.25"], "label": [1, 0]}), path)
    status, _, err = run(capsys, "eval", path)
    assert status == 2 and "column pred: has type string, not a number" in err, err


@pytest.mark.parametrize("tag, bad", [("a b", "' '"), ("a=b", "'='"), ("a\\tb", None)])
def test_a_tag_that_would_break_the_log_line_is_refused(tmp_path, capsys, tag, bad):
    path = tmp_path / "t.csv"
    path.write_text(f"uid,pred,label,tag\n1,0.5,1,x\n1,0.25,0,{tag}\n")
    status, out, err = run(capsys, "eval", "--metrics", "wuauc", "--tag", "tag", path)
    if bad is None:  # a backslash and t: two plain characters
        assert status == 0, err
        return
    assert status == 2 and out == ""
    assert f"t.csv:3: column tag: {tag!r} holds {bad}" in err, err


@pytest.mark.parametrize("name", ["a b", "a=b", "", "a\nb"])
def test_a_name_that_would_break_the_log_line_is_refused(tmp_path, capsys, name):
    path = write(str(tmp_path / "a.tsv"), rows(100))
    status, out, err = run(capsys, "eval", "--name", name, path)
    assert status == 2 and out == "" and "--name" in err, err


def test_a_config_metric_name_that_would_break_the_log_line_is_refused(tmp_path, capsys):
    path = write(str(tmp_path / "a.tsv"), rows(100))
    config = tmp_path / "c.toml"
    config.write_text('[metrics."click auc"]\nkind = "auc"\n')
    status, _, err = run(capsys, "eval", "--config", config, path)
    assert status == 2 and "metric name 'click auc'" in err, err


# -- 8. masked arrays; a metric that is not one -------------------------------------------


def test_masked_values_are_refused_and_an_unmasked_array_reads():
    metric = KINDS["auc"].build({"table_size": 10}, None)
    pred = np.ma.masked_array([0.1, 0.9, 0.5], mask=[False, True, False])
    with pytest.raises(InputError, match="masked") as caught:
        validation.as_vector("pred", pred)
    assert caught.value.first_index == 1 and caught.value.count == 1
    with pytest.raises(InputError, match="masked"):
        metric.update(pred, np.array([0, 1, 0]))
    plain = validation.as_vector("pred", np.ma.masked_array([0.1, 0.9], mask=False))
    assert type(plain) is np.ndarray and plain.tolist() == [0.1, 0.9]


def test_a_mapping_to_something_not_a_metric_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="metric 'a' must be a metric"):
        validation.check_metric_mapping({"a": 5})
    validation.check_metric_mapping({"b": KINDS["auc"].build({}, None)})
    with pytest.raises(TypeError, match="metric 'a' must be a metric"):
        Evaluator({"a": 5}, comm=Comm.local())


@pytest.mark.parametrize("kind", ["wuauc", "pn"])
def test_masked_uids_and_tags_are_refused(kind):
    metric = KINDS[kind].build({}, Comm.local())
    uid = np.ma.masked_array([1, 2, 3], mask=[False, False, True])
    with pytest.raises(InputError, match="uid: is a masked array") as caught:
        metric.update(uid, [0.1, 0.2, 0.3], [0, 1, 0])
    assert caught.value.first_index == 2
    if kind == "wuauc":
        tag = np.ma.masked_array(["a", "b", "c"], mask=[True, False, False])
        with pytest.raises(InputError, match="tag: is a masked array"):
            metric.update([1, 2, 3], [0.1, 0.2, 0.3], [0, 1, 0], tag=tag)


@pytest.mark.parametrize("tag", ["a b", "x=y", "t\tu"])
def test_the_api_refuses_a_tag_that_would_break_the_log_line(tag):
    metric = KINDS["wuauc"].build({}, Comm.local())
    with pytest.raises(InputError, match=r"tag: .* would break the space-separated"):
        metric.update([1, 2], [0.1, 0.2], [0, 1], tag=[tag, "ok"])
    assert metric.rows == 0


# -- 9. flag values ---------------------------------------------------------------------------


@pytest.mark.parametrize("flag, value, text", [
    ("--json", "", "--json: is empty"), ("--json", "-", "'-' (stdout) is not supported"),
    ("--name", "", "--name: must not be empty"), ("--metrics", "", "--metrics: is empty"),
    ("--metrics", " ", "--metrics: is empty"),
])
def test_empty_flag_values_are_usage_errors(tmp_path, capsys, monkeypatch, flag, value, text):
    monkeypatch.chdir(tmp_path)
    path = write(str(tmp_path / "a.tsv"), rows(100))
    status, out, err = run(capsys, "eval", flag, value, path)
    assert status == 2 and out == "" and text in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tsv"]


def test_json_checks_happen_before_reading(tmp_path):
    with pytest.raises(InputError):
        pipeline.check_writable(str(tmp_path))


# -- issue 24: a demanding first day -------------------------------------------------------


@pytest.mark.parametrize("kind", NAMES)
def test_none_for_a_required_input_is_missing_not_a_shape(kind):
    data = fixture(kind).plain_rows(np.random.default_rng(0), 200)
    for missing in (name for name in data if name not in KINDS[kind].optional):
        metric = KINDS[kind].build({}, Comm())
        given = {arg: (None if arg == missing else column) for arg, column in data.items()}
        with pytest.raises(InputError) as caught:
            metric.update(**given)
        assert str(caught.value).startswith(f"{missing}: missing"), caught.value


def _numpy_leaks(value: object, where: str = "") -> list[str]:
    """Where a result's JSON object holds anything but plain Python values."""
    if isinstance(value, dict):
        return [leak for k, v in value.items() for leak in _numpy_leaks(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [leak for i, v in enumerate(value) for leak in _numpy_leaks(v, f"{where}[{i}]")]
    if value is None or type(value) in (bool, int, float, str):
        return []
    return [f"{where}: {type(value).__module__}.{type(value).__name__}"]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", NAMES)
def test_to_dict_of_every_kind_holds_plain_python_values(kind, weighted):
    """Empty and fed, with the default options and each of the fixture's variants
    (``compare``, ``window``); fractional weights where the kind takes weights."""
    weights = [spec.name for spec in KINDS[kind].declared_inputs if spec.weight]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for given in ({}, *fixture(kind).variants):
            metric = KINDS[kind].build(given, Comm())
            assert _numpy_leaks(metric.compute().to_dict()) == [], (kind, "empty")
            args = fixture(kind).rows_for(given, np.random.default_rng(1), 3000)
            for name in weights if weighted else ():
                args[name] = args[name] + 0.5
            metric.update(**args)
            result = metric.compute()
            assert _numpy_leaks(result.to_dict()) == [], (kind, given)
            json.dumps(result.to_dict(), allow_nan=False)


def test_a_header_of_200000_characters_reads_or_names_line_1(tmp_path, capsys):
    data = rows(500)
    plain = write(str(tmp_path / "plain.tsv"), {k: data[k] for k in ("pred", "label")})
    body = open(plain, "rb").read().split(b"\n", 1)[1]
    long_name = "x" * 200_000
    wide = tmp_path / "wide.tsv"  # a valid header with one very long column name
    wide.write_bytes(f"{long_name}\tpred\tlabel\n".encode()
                     + b"".join(b"1\t" + line + b"\n" for line in body.splitlines()))
    assert _json(tmp_path, capsys, wide) == _json(tmp_path, capsys, plain)
    bad = tmp_path / "bad.tsv"  # no pred column: named by line 1, the listing cut short
    bad.write_bytes(f"{long_name}\n".encode() + b"1\n" * 10)
    status, out, err = run(capsys, "eval", bad)
    assert status == 2 and out == "" and len(err) < 500, err
    assert err.startswith(f"mpieval: error: {bad}:1: column pred: not in the header"), err


@pytest.mark.parametrize("case", ["sparse", "zeros.gz", "no line end", "nul"])
def test_a_file_without_a_text_header_is_refused_at_once(tmp_path, capsys, case):
    path = tmp_path / f"{case.replace(' ', '_')}.tsv"
    if case == "sparse":
        with open(path, "wb") as out:  # `truncate -s 4G`: zeros, no disk used
            out.truncate(4 << 30)
    elif case == "zeros.gz":
        path = tmp_path / "zeros.tsv.gz"
        path.write_bytes(gzip.compress(bytes(8 << 20)))
    elif case == "no line end":
        path.write_bytes(b"a" * (readers.HEADER_LIMIT + 1000))
    else:
        path.write_bytes(b"pred\tla\0bel\n0.5\t1\n")
    start = time.monotonic()
    status, out, err = run(capsys, "eval", path)
    assert time.monotonic() - start < 5
    assert status == 2 and out == "", err
    problem = "no end of the header line" if case == "no line end" else (
        "the header holds a NUL byte")
    assert err.startswith(f"mpieval: error: {path}:1: {problem}"), err
    assert err.count("\n") == 1


def test_a_directory_and_a_proc_file_are_named_as_such(tmp_path, capsys):
    status, _, err = run(capsys, "eval", tmp_path)
    assert status == 2 and err.startswith(f"mpieval: error: {tmp_path}: is a directory"), err
    status, _, err = run(capsys, "eval", "--format", "tsv", "/proc/self/status")
    assert status == 2, err
    assert err.startswith("mpieval: error: /proc/self/status: not a regular file"), err
    (tmp_path / "empty.tsv").write_text("")  # a real empty file is still one
    status, _, err = run(capsys, "eval", tmp_path / "empty.tsv")
    assert status == 2 and "empty.tsv:1: empty file (no header line)" in err, err


def _with_blank_line(tmp_path, name: str, n: int, at: int, crlf: bool = False) -> str:
    """A TSV of ``n`` rows whose line ``at`` (1-based, the header is 1) is empty."""
    data = rows(n)
    plain = write(str(tmp_path / "plain.tsv"), {k: data[k] for k in ("uid", "pred", "label")})
    lines = open(plain, "rb").read().split(b"\n")
    lines.insert(at - 1, b"")
    text = b"\n".join(lines)
    if crlf:
        text = text.replace(b"\n", b"\r\n")
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    return str(path)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("name", "n", "at", "crlf"), [
    ("early.tsv", 100, 3, False), ("crlf.tsv", 100, 50, True),
    ("far.tsv", 200_000, 150_001, False), ("far.tsv.gz", 200_000, 150_001, False)])
def test_a_blank_line_is_named_as_an_empty_line(tmp_path, capsys, threads, name, n, at, crlf):
    path = _with_blank_line(tmp_path, name, n, at, crlf)
    readers.use_threads(threads)
    try:
        status, out, err = run(capsys, "eval", path)
    finally:
        readers.use_threads(1)
    assert status == 2 and out == "", err
    assert err == f"mpieval: error: {path}:{at}: empty line: every line after the header " \
        "holds a row (remove it)\n"
    empty_value = tmp_path / "value.tsv"  # an empty field of a line is still that
    empty_value.write_bytes(b"uid\tpred\tlabel\n1\t0.5\t1\n2\t\t0\n")
    status, _, err = run(capsys, "eval", empty_value)
    assert status == 2 and err.startswith(f"mpieval: error: {empty_value}:3: column pred: "
                                          "empty value where a number is expected"), err


def test_weights_past_float64_are_an_error_naming_the_weight():
    from mpieval import AucMetric

    pred, label = np.array([0.2, 0.7, 0.4, 0.3]), np.array([0, 1, 1, 0])
    metric = AucMetric()  # each total fits, their product (P N) does not: auc was nan
    metric.update(pred, label, np.array([1e300, 1e300, 1.0, 1.0]))
    with pytest.raises(InputError) as info:
        metric.compute()
    assert info.value.field == "weight" and "too large" in info.value.problem
    metric = AucMetric()  # the weights' sum itself overflows: the row is named
    with pytest.raises(InputError) as info:
        metric.update(pred, label, np.array([1.0, 1.5e308, 1.0, 1.5e308]))
    assert (info.value.field, info.value.first_index) == ("weight", 3)


def test_huge_weights_that_fit_give_the_scaled_values_and_a_short_num(tmp_path, capsys):
    from mpieval import AucMetric

    data = rows(3000)
    scale = 1e100
    small, large = AucMetric(table_size=1000), AucMetric(table_size=1000)
    small.update(data["pred"], data["label"], data["w"] + 1)
    large.update(data["pred"], data["label"], (data["w"] + 1) * scale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        a, b = small.compute(), large.compute()
    assert b.auc == pytest.approx(a.auc, rel=1e-12)
    assert b.copc == pytest.approx(a.copc, rel=1e-12)
    line = b.to_log_line("auc")
    num = line.split(" num=")[1].split(" ")[0]
    assert float(num) == pytest.approx(a.num * scale, rel=1e-12) and len(num) < 25, line
    assert isinstance(b.to_dict()["num"], float) and isinstance(a.to_dict()["num"], int)
    assert f" num={int(a.num)} " in a.to_log_line("auc")  # below 2**53: %d as before


@pytest.mark.parametrize("argv", [["eval", "--config", "{zero}", "{data}"],
                                  ["eval", "--config", "{big}", "{data}"],
                                  ["report", "{zero}", "-o", "{out}"]])
def test_a_config_or_run_that_never_ends_is_refused_without_reading_it(tmp_path, capsys,
                                                                       argv):
    """Other readers of a whole file: a device or pipe, and a config of megabytes."""
    data = write(str(tmp_path / "d.tsv"), rows(100))
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (2 << 20))
    values = {"zero": "/dev/zero", "big": str(big), "data": data,
              "out": str(tmp_path / "p.html")}
    start = time.monotonic()
    status, out, err = run(capsys, *[a.format(**values) for a in argv])
    assert time.monotonic() - start < 10
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert "not a regular file" in err or "larger than 1,048,576 bytes" in err, err


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float32", "float64",
                                   "bool", "uint16", "float16"])
def test_binary_labels_narrow_as_check_binary_checks(dtype: str) -> None:
    """``binary_uint8``'s one pass: 0/1 labels as uint8, and for any other value the same
    error as ``check_binary`` (the first bad row, the count), in every dtype."""
    good = np.array([0, 1, 1, 0, 1], dtype=dtype)
    narrowed = validation.binary_uint8("label", good)
    assert narrowed.dtype == np.uint8 and narrowed.tolist() == [0, 1, 1, 0, 1]
    assert validation.binary_uint8("label", good[::2]).tolist() == [0, 1, 1]  # strided
    if dtype == "bool":
        return
    bad_values = [2] + ([0.5, np.nan, -np.inf] if dtype.startswith("float") else [])
    if dtype.startswith("int"):
        bad_values.append(-1)
    for value in bad_values:
        bad = np.array([0, 1, value, 1, value], dtype=dtype)
        with pytest.raises(InputError) as expected:
            validation.check_binary("label", bad)
        with pytest.raises(InputError) as got:
            validation.binary_uint8("label", bad)
        assert str(got.value) == str(expected.value)
        assert (got.value.first_index, got.value.count) == (2, 2)


@pytest.mark.parametrize("dtype", ["int8", "float64"])
@pytest.mark.parametrize("where", [0, 4095, 4096, 3 * 4096 + 17, 20_000 - 1])
def test_binary_labels_name_their_first_bad_row_across_blocks(dtype: str, where: int) -> None:
    """The compiled pass checks blocks of 4096 rows without a branch: a bad value in any
    block, at either edge of one, is named at its own row, with the count of all."""
    labels = (np.arange(20_000) % 3 == 0).astype(dtype)
    assert validation.binary_uint8("label", labels).tolist() == labels.tolist()
    labels[where] = 2
    labels[-1] = 2
    with pytest.raises(InputError) as got:
        validation.binary_uint8("label", labels)
    assert got.value.first_index == where
    assert got.value.count == (1 if where == len(labels) - 1 else 2)


@pytest.mark.parametrize("name", ["rows.tsv", "rows.parquet", "rows.tsv.gz"])
def test_a_rank_expects_about_the_rows_it_reads(tmp_path, name: str) -> None:
    """The rows a rank's per-user metrics reserve room for, from its first batch: at
    least the rows it reads and not many more, on 1 and 3 ranks; Parquet's exactly (its
    row groups say), gzip's none (its bytes are compressed)."""
    from mpieval.config import specs_from_flags

    n = 5000
    path = write(str(tmp_path / name), rows(n))
    specs = specs_from_flags("wuauc", columns={"uid": "uid", "tag": "tag"}, options={},
                             prefix=None)
    for ranks in (1, 3):
        job = pipeline.plan_job(specs, [path], ranks)
        for rank in range(ranks):
            read = list(pipeline._batches(job, rank))
            if not read:  # a rank without a piece (a gzip file is one)
                continue
            got = sum(batch.rows for batch in read)
            expected = pipeline._expected_rows(job, rank, read[0])
            if name.endswith(".gz"):
                assert expected is None
            elif name.endswith(".parquet"):
                assert expected == got
            else:
                assert got <= expected <= 1.05 * got + 1024


def test_binary_labels_refuse_an_out_of_another_length() -> None:
    from mpieval import _core

    with pytest.raises(ValueError, match="as long as values"):
        _core.labels.binary_to_u8(np.zeros(5), np.empty(3, np.uint8))
    short = np.empty(3, np.uint8)  # validation's own wrapper makes its own instead
    assert validation.binary_uint8("label", np.ones(5), out=short).tolist() == [1] * 5
