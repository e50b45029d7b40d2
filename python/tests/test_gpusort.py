"""The Python module: gpusort.sort against numpy on every key type, IEEE totalOrder for floats,
structured records, gpusort.sort_file on real files with its stats, the errors, and that the
GIL is released while a sort runs. Seeds: GPUSORT_TEST_SEED, else a fixed default."""

import errno
import os
import pathlib
import threading
import time
import warnings

import numpy as np
import pytest

import gpusort

SEED = int(os.environ.get("GPUSORT_TEST_SEED", "20261122"), 0)
NUMERIC = ["uint32", "uint64", "int32", "int64", "float32", "float64"]
UNSIGNED_OF = {"float32": np.uint32, "float64": np.uint64}


def rng(*salt):
    return np.random.default_rng([SEED, *salt])


def random_keys(dtype, n, generator):
    """Keys over the whole range of an integer type; finite floats of every sign and scale."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        mantissa = generator.standard_normal(n)
        exponent = generator.integers(-30, 30, n)
        return (mantissa * 2.0 ** exponent).astype(dtype)
    info = np.iinfo(dtype)
    return generator.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def total_order_keys(values):
    """IEEE totalOrder as unsigned integers: the sign bit set for positives, every bit flipped
    for negatives. The independent oracle for the float order gpusort documents."""
    bits = values.view(UNSIGNED_OF[values.dtype.name])
    top = bits.dtype.type(1) << bits.dtype.type(bits.dtype.itemsize * 8 - 1)
    return np.where(bits & top, ~bits, bits | top)


def same_bits(a, b):
    return a.tobytes() == b.tobytes()


# --- sort(array) -------------------------------------------------------------------------------

def test_version():
    assert gpusort.__version__.count(".") == 2
    assert gpusort.version().startswith("gpusort " + gpusort.__version__ + " (")


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 100003])
def test_sort_matches_numpy(dtype, n):
    data = random_keys(dtype, n, rng(n, NUMERIC.index(dtype)))
    if n > 2:
        data[: n // 4] = data[n // 2 : n // 2 + n // 4]  # equal keys
    expected = np.sort(data, kind="stable")
    gpusort.sort(data)
    assert data.dtype == np.dtype(dtype)
    assert same_bits(data, expected), f"seed {SEED}"


@pytest.mark.parametrize("dtype", NUMERIC)
def test_reverse(dtype):
    data = random_keys(dtype, 50000, rng(7, NUMERIC.index(dtype)))
    expected = np.sort(data)[::-1]
    gpusort.sort(data, reverse=True)
    assert same_bits(data, expected), f"seed {SEED}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reverse", [False, True])
def test_floats_in_total_order(dtype, reverse):
    """-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, NaNs by payload, as documented;
    numpy.sort differs (every NaN last, -0.0 and +0.0 equal)."""
    f = np.dtype(dtype).type
    info = np.finfo(dtype)
    u = UNSIGNED_OF[dtype]
    quiet_nan = np.array([np.nan], dtype).view(u)[0]
    nans = np.array([quiet_nan, quiet_nan | u(1), quiet_nan | u(5)], dtype=u).view(dtype)
    specials = np.concatenate([
        nans, -nans,
        np.array([np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, info.max, -info.max,
                  info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal],
                 dtype=dtype),
    ])
    generator = rng(11, reverse)
    data = np.concatenate([specials, specials, random_keys(dtype, 1000, generator)])
    generator.shuffle(data)
    keys = total_order_keys(data)
    order = np.argsort(~keys if reverse else keys, kind="stable")
    expected = data[order]
    gpusort.sort(data, reverse=reverse)
    assert same_bits(data, expected), f"seed {SEED}"

    ascending = data[::-1] if reverse else data
    assert np.isnan(ascending[0]) and np.signbit(ascending[0])
    assert np.isnan(ascending[-1]) and not np.signbit(ascending[-1])
    zeros = ascending[ascending == f(0)]
    assert list(np.signbit(zeros)) == [True, True, False, False]
    finite = ascending[np.isfinite(ascending)]
    assert np.all(finite[:-1] <= finite[1:])


def test_structured_records_by_a_field_are_stable():
    record = np.dtype([("id", "<u4"), ("key", "<f8"), ("name", "S6"), ("small", "<i4")])
    n = 20000
    generator = rng(13)
    data = np.zeros(n, record)
    data["id"] = np.arange(n)
    data["key"] = generator.choice([-2.5, 0.0, 1.0, 3.25, 1e9], n)  # many equal keys
    letters = generator.integers(ord("a"), ord("e"), (n, 6), dtype=np.uint8)
    data["name"] = letters.view("S6").ravel()
    data["small"] = generator.integers(-50, 50, n)

    for field, reverse in [("key", False), ("name", False), ("small", True)]:
        work = data.copy()
        keys = work[field]
        order = np.argsort(keys, kind="stable")
        if reverse:  # stable descending: equal keys keep input order
            order = np.argsort(-keys.astype(np.int64), kind="stable")
        gpusort.sort(work, key=field, reverse=reverse)
        assert work.tobytes() == data[order].tobytes(), f"{field} seed {SEED}"


def test_parallel_and_empty():
    data = random_keys("uint64", 10000, rng(17))
    expected = np.sort(data)
    gpusort.sort(data, parallel=1)
    assert same_bits(data, expected)
    empty = np.array([], dtype=np.int32)
    gpusort.sort(empty)
    assert empty.size == 0


@pytest.mark.parametrize("make, error, words", [
    (lambda: np.arange(10, dtype=np.uint64)[::2], ValueError, "not contiguous"),
    (lambda: np.arange(10, dtype=np.uint64)[::-1], ValueError, "not contiguous"),
    (lambda: np.zeros((3, 4), np.uint32), ValueError, "1-D"),
    (lambda: np.zeros(4, ">u8"), ValueError, "big-endian"),
    (lambda: np.array([1, "a", None], dtype=object), TypeError, "Python objects"),
    (lambda: np.zeros(4, np.float16), TypeError, "unsupported dtype"),
    (lambda: np.zeros(4, np.int16), TypeError, "unsupported dtype"),
    (lambda: np.zeros(4, bool), TypeError, "unsupported dtype"),
    (lambda: np.zeros(4, np.complex128), TypeError, "unsupported dtype"),
    (lambda: [3, 1, 2], TypeError, "numpy.ndarray"),
    (lambda: np.zeros(4, [("a", "<u4"), ("b", "<f4")]), TypeError, "key='field'"),
])
def test_sort_refuses_what_it_cannot_sort(make, error, words):
    with pytest.raises(error, match=words):
        gpusort.sort(make())


def test_sort_refuses_read_only_arrays_and_bad_keys():
    data = np.arange(5, dtype=np.int64)
    data.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        gpusort.sort(data)
    with pytest.raises(TypeError, match="structured"):
        gpusort.sort(np.arange(5, dtype=np.int64), key="x")
    records = np.zeros(4, [("a", "<u4"), ("b", ">f8"), ("c", "O")])
    with pytest.raises(ValueError, match="no field 'z'"):
        gpusort.sort(np.zeros(4, [("a", "<u4")]), key="z")
    with pytest.raises(TypeError, match="Python objects"):
        gpusort.sort(records, key="a")
    with pytest.raises(ValueError, match="field 'b' is big-endian"):
        gpusort.sort(np.zeros(4, [("a", "<u4"), ("b", ">f8")]), key="b")
    with pytest.raises(ValueError, match="parallel"):
        gpusort.sort(np.arange(5), parallel=0)


# --- sort_file(inputs, output) ----------------------------------------------------------------

STATS_FIELDS = {"records", "output_records", "input_bytes", "runs", "merge_passes", "spilled",
                "backend", "strategy", "gpu_sorter", "wall_seconds", "stages"}


def test_sort_file_on_the_cpu_returns_the_stats(tmp_path):
    data = random_keys("uint64", 100000, rng(19))
    data.tofile(tmp_path / "in.bin")
    stats = gpusort.sort_file(str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), devices="none")
    assert same_bits(np.fromfile(tmp_path / "out.bin", np.uint64), np.sort(data))
    assert set(stats) == STATS_FIELDS
    assert stats["records"] == stats["output_records"] == data.size
    assert stats["input_bytes"] == data.nbytes
    assert (stats["backend"], stats["strategy"], stats["runs"]) == ("cpu", "cpu-one-run", 1)
    assert stats["spilled"] is False and stats["wall_seconds"] > 0
    names = [stage["name"] for stage in stats["stages"]]
    assert "sort" in names
    assert all(set(stage) == {"name", "busy_seconds", "bytes", "gb_per_s", "start", "end"}
               for stage in stats["stages"])


def test_sort_file_takes_paths_lists_and_options(tmp_path):
    """Path objects, several inputs concatenated, options by the command's names and by the
    C++ fields' names, a small budget that forms several runs and spills them."""
    parts = [random_keys("float64", 150000, rng(23, i)) for i in range(3)]
    inputs = [tmp_path / f"part{i}.bin" for i in range(3)]
    for part, path in zip(parts, inputs):
        part.tofile(path)
    whole = np.concatenate(parts)
    expected = whole[np.argsort(~total_order_keys(whole), kind="stable")]
    spill = tmp_path / "spill"
    spill.mkdir()
    stats = gpusort.sort_file(inputs, tmp_path / "out.bin", type="f64", descending=True,
                              buffer_size="4M", temp_dir=spill, threads=2, algorithm="cpu")
    assert same_bits(np.fromfile(tmp_path / "out.bin", np.float64), expected)
    assert stats["records"] == whole.size and stats["runs"] > 1
    assert stats["strategy"] in ("cpu-runs", "cpu-spilled-runs")
    assert list(spill.iterdir()) == []  # spilled runs do not outlive the sort


def test_sort_file_records_with_payload_and_unique(tmp_path):
    record = np.dtype([("key", "<u8"), ("value", "<u8")])
    n = 30000
    data = np.zeros(n, record)
    data["key"] = rng(29).integers(0, 1000, n)  # many equal keys
    data["value"] = np.arange(n)
    data.tofile(tmp_path / "in.bin")

    stats = gpusort.sort_file(tmp_path / "in.bin", tmp_path / "out.bin", format="kv64",
                              devices="none")
    expected = data[np.argsort(data["key"], kind="stable")]
    assert np.fromfile(tmp_path / "out.bin", record).tobytes() == expected.tobytes()
    assert stats["records"] == n

    stats = gpusort.sort_file([str(tmp_path / "in.bin")], str(tmp_path / "unique.bin"),
                              format="kv64", unique=True, devices="none", stable=True,
                              record_size=16, key_offset=0, merge_on=None)
    kept = np.fromfile(tmp_path / "unique.bin", record)
    first = np.unique(expected["key"], return_index=True)[1]
    assert kept.tobytes() == expected[first].tobytes()
    assert stats["output_records"] == kept.size < stats["records"]


def test_sort_file_takes_numpy_integers_and_any_file_name(tmp_path):
    """numpy integers stand for ints; a file name that is not UTF-8 (bytes) is used as it is."""
    name = os.fsencode(tmp_path) + b"/keys-\xff.bin"
    data = random_keys("uint32", 3000, rng(47))
    with open(name, "wb") as f:
        f.write(data.tobytes())
    stats = gpusort.sort_file(name, name, type="u32", record_size=np.int64(4),
                              parallel=np.uint8(1), devices="none")
    assert stats["records"] == data.size
    with open(name, "rb") as f:
        assert same_bits(np.frombuffer(f.read(), np.uint32), np.sort(data))


def test_sort_file_in_place_and_merge(tmp_path):
    path = tmp_path / "keys.bin"
    data = random_keys("int32", 5000, rng(31))
    data.tofile(path)
    gpusort.sort_file(path, path, type="i32")  # an input may be the output
    assert same_bits(np.fromfile(path, np.int32), np.sort(data))
    other = np.sort(random_keys("int32", 700, rng(37)))
    other.tofile(tmp_path / "other.bin")
    stats = gpusort.sort_file([path, tmp_path / "other.bin"], tmp_path / "merged.bin",
                              type="i32", merge=True)
    assert stats["strategy"] == "merge-inputs"
    assert same_bits(np.fromfile(tmp_path / "merged.bin", np.int32),
                     np.sort(np.concatenate([data, other])))


def test_sort_file_errors_become_python_exceptions(tmp_path):
    missing = tmp_path / "missing.bin"
    with pytest.raises(FileNotFoundError) as caught:
        gpusort.sort_file(missing, tmp_path / "out.bin")
    assert caught.value.errno == errno.ENOENT
    assert str(missing) in str(caught.value)
    assert not (tmp_path / "out.bin").exists()

    (tmp_path / "odd.bin").write_bytes(b"12345678abcd")
    with pytest.raises(RuntimeError, match="not a multiple of"):
        gpusort.sort_file(tmp_path / "odd.bin", tmp_path / "out.bin")
    with pytest.raises(OSError) as caught:
        gpusort.sort_file(tmp_path / "odd.bin", tmp_path / "no-such-dir" / "out.bin", type="u32")
    assert caught.value.errno == errno.ENOENT

    good = tmp_path / "in.bin"
    np.arange(10, dtype=np.uint64).tofile(good)
    out = tmp_path / "out.bin"
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        gpusort.sort_file(good, out, colour="blue")
    with pytest.raises(TypeError, match="unexpected keyword argument 'check'"):
        gpusort.sort_file(good, out, check=True)
    with pytest.raises(TypeError, match="True or False"):
        gpusort.sort_file(good, out, reverse="yes")
    with pytest.raises(TypeError, match="two keywords name the option --reverse"):
        gpusort.sort_file(good, out, reverse=True, descending=False)
    with pytest.raises(TypeError, match="not True or False"):
        gpusort.sort_file(good, out, record_size=True)
    with pytest.raises(TypeError, match="float"):
        gpusort.sort_file(good, out, buffer_size=1.5)
    with pytest.raises(TypeError, match="list of paths"):
        gpusort.sort_file(42, out)
    with pytest.raises(ValueError, match="no inputs"):
        gpusort.sort_file([], out)
    with pytest.raises(ValueError, match="unknown --algorithm 'quick'"):
        gpusort.sort_file(good, out, algorithm="quick")
    with pytest.raises(ValueError, match="--devices none forbids one"):
        gpusort.sort_file(good, out, algorithm="onesweep", devices="none")
    with pytest.raises(ValueError, match="unknown key type|bytes:N|key type"):
        gpusort.sort_file(good, out, type="u16")
    assert not out.exists()


def test_sort_file_devices_list(tmp_path):
    """A list of device ids is the command's --devices 1,0: every listed GPU takes a share of a
    large file, so no warning. Without those GPUs the sort fails naming CUDA (the devices were
    demanded)."""
    good = tmp_path / "in.bin"
    np.arange(10, dtype=np.uint64).tofile(good)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            gpusort.sort_file(good, tmp_path / "out.bin", devices=[1, 0])
        except RuntimeError as e:
            assert "CUDA" in str(e)
    with pytest.raises(TypeError, match="device ids are ints"):
        gpusort.sort_file(good, tmp_path / "out.bin", devices=["0"])


# --- the GIL -----------------------------------------------------------------------------------

def ticks_during(work):
    """Runs work() while another thread counts ticks of about a millisecond; returns the
    ticks that fell inside work() and how long it took. A call that held the GIL would allow
    none (at most one or two at its edges)."""
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        time.sleep(0.02)
        start = time.perf_counter()
        work()
        end = time.perf_counter()
    finally:
        stop.set()
        thread.join()
    return sum(start < t < end for t in ticks), end - start


def test_sort_releases_the_gil():
    data = random_keys("uint64", 1 << 23, rng(41))
    inside, seconds = ticks_during(lambda: gpusort.sort(data, parallel=1))
    assert np.all(data[:-1] <= data[1:])
    assert seconds > 0.05, "the sort was too quick to tell"
    assert inside >= 10, f"{inside} ticks of another thread in {seconds:.3f} s of sorting"


def test_sort_file_releases_the_gil(tmp_path):
    # 2^22 keys took 0.0499 s once on the 2-core VM: too close to the 0.05 s it must last.
    random_keys("uint64", 1 << 24, rng(43)).tofile(tmp_path / "in.bin")
    inside, seconds = ticks_during(
        lambda: gpusort.sort_file(tmp_path / "in.bin", tmp_path / "out.bin", devices="none",
                                  parallel=1))
    assert seconds > 0.05, "the sort was too quick to tell"
    assert inside >= 10, f"{inside} ticks of another thread in {seconds:.3f} s of sorting"
