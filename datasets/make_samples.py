#!/usr/bin/env python3
"""Regenerates (or checks) the sample files in datasets/ with gpusort-datagen.

  make_samples.py --datagen PATH            regenerate the samples and their checksums here
  make_samples.py --datagen PATH --check    regenerate into a temp dir and check that every
                                            byte matches the committed samples, that the
                                            checksums match SHA256SUMS and SHA256SUMS.sorted,
                                            and that README.md shows every command
  make_samples.py --print-commands          print the commands (as README.md shows them)

SHA256SUMS holds the sha256 of each sample (check with `sha256sum -c SHA256SUMS`);
SHA256SUMS.sorted the sha256 of each sample after a stable ascending sort by its key, computed
here by a reference sort written from the key definitions (not by gpusort or its tools).
A NumPy .npy sample is gpusort-datagen's records behind a header written here (NumPy's
layout, version 1.0, padded to 64 bytes); its sorted checksum keeps that header.
"""

from __future__ import annotations

import argparse
import hashlib
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name, gpusort-datagen arguments, (record size, key offset, key kind, key size), and for an
# .npy sample the dtype its header gives the records (None: raw records)
SAMPLES = [
    ("sample-u64-uniform.bin",
     ["--type", "u64", "--count", "65536", "--distribution", "uniform", "--seed", "1"],
     (8, 0, "u64", 8)),
    ("sample-kv16.bin",
     ["--format", "kv64", "--count", "16384", "--distribution", "few:100", "--seed", "2"],
     (16, 0, "u64", 8)),
    ("sample-f64-special.bin",
     ["--type", "f64", "--count", "8192", "--distribution", "special", "--seed", "3"],
     (8, 0, "f64", 8)),
    ("sample-gensort.bin",
     ["--format", "gensort", "--count", "1000", "--distribution", "uniform", "--seed", "4"],
     (100, 0, "bytes", 10)),
    ("sample-scores.npy",
     ["--type", "i64", "--record-size", "16", "--key-offset", "8", "--count", "4096",
      "--distribution", "few:100", "--seed", "5"],
     (16, 8, "i64", 8), "[('id', '<u8'), ('score', '<i8')]"),
]
SAMPLES = [(*sample, None) if len(sample) == 3 else sample for sample in SAMPLES]


def command(name: str, args: list[str], datagen: str = "gpusort-datagen") -> list[str]:
    return [datagen, *args, "-o", name]


def npy_header(descr: str, records: int) -> bytes:
    """The header NumPy writes for a 1-D array: the dict, spaces and a newline to 64 bytes."""
    d = "{'descr': %s, 'fortran_order': False, 'shape': (%d,), }" % (descr, records)
    total = (10 + len(d) + 1 + 63) // 64 * 64
    return (b"\x93NUMPY\x01\x00" + (total - 10).to_bytes(2, "little") +
            (d + " " * (total - 10 - len(d) - 1) + "\n").encode("latin1"))


def split_npy(data: bytes) -> tuple[bytes, bytes]:
    length = 10 + int.from_bytes(data[8:10], "little")
    return data[:length], data[length:]


def sort_key(kind: str, offset: int, size: int):
    def key(record: bytes):
        field = record[offset:offset + size]
        if kind == "u64":
            return int.from_bytes(field, "little")
        if kind == "i64":
            return int.from_bytes(field, "little", signed=True)
        if kind == "f64":  # IEEE 754 totalOrder: negatives reversed below positives
            bits = int.from_bytes(field, "little")
            return bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
        return field  # bytes: unsigned lexicographic
    return key


def reference_sorted(data: bytes, layout, descr) -> bytes:
    header = b""
    if descr is not None:  # gpusort keeps the header: the shape does not change
        header, data = split_npy(data)
    record_size, offset, kind, size = layout
    records = [data[i:i + record_size] for i in range(0, len(data), record_size)]
    records.sort(key=sort_key(kind, offset, size))  # list.sort is stable
    return header + b"".join(records)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_sums(path: Path) -> dict[str, str]:
    sums = {}
    for line in path.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.strip().lstrip("*")] = digest
    return sums


def generate(datagen: str, where: Path) -> None:
    for name, args, layout, descr in SAMPLES:
        subprocess.run(command(name, args, datagen) + ["--quiet"], cwd=where, check=True)
        if descr is not None:
            records = (where / name).read_bytes()
            (where / name).write_bytes(npy_header(descr, len(records) // layout[0]) + records)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--datagen", help="path of gpusort-datagen")
    p.add_argument("--check", action="store_true")
    p.add_argument("--print-commands", action="store_true")
    args = p.parse_args()

    if args.print_commands:
        for name, a, _, _ in SAMPLES:
            print(shlex.join(command(name, a)))
        return 0
    if not args.datagen:
        p.error("--datagen is required")
    datagen = str(Path(args.datagen).resolve())

    if not args.check:
        generate(datagen, HERE)
        inputs, outputs = [], []
        for name, _, layout, descr in SAMPLES:
            data = (HERE / name).read_bytes()
            inputs.append(f"{sha256(data)}  {name}\n")
            outputs.append(f"{sha256(reference_sorted(data, layout, descr))}  {name}\n")
        (HERE / "SHA256SUMS").write_text("".join(inputs))
        (HERE / "SHA256SUMS.sorted").write_text("".join(outputs))
        print(f"wrote {len(SAMPLES)} samples, SHA256SUMS and SHA256SUMS.sorted in {HERE}")
        return 0

    failures = []
    sums = read_sums(HERE / "SHA256SUMS")
    sorted_sums = read_sums(HERE / "SHA256SUMS.sorted")
    readme = (HERE / "README.md").read_text()
    with tempfile.TemporaryDirectory(prefix="gpusort-datasets-") as tmp:
        first, second = Path(tmp) / "a", Path(tmp) / "b"
        first.mkdir()
        second.mkdir()
        generate(datagen, first)
        generate(datagen, second)  # a second run: the same bytes again
        for name, args_, layout, descr in SAMPLES:
            fresh = (first / name).read_bytes()
            if fresh != (second / name).read_bytes():
                failures.append(f"{name}: two runs of gpusort-datagen gave different bytes")
            committed_path = HERE / name
            if not committed_path.exists():
                failures.append(f"{name}: not committed")
                continue
            committed = committed_path.read_bytes()
            if fresh != committed:
                failures.append(f"{name}: regenerated bytes differ from the committed sample")
            if sums.get(name) != sha256(committed):
                failures.append(f"{name}: sha256 does not match SHA256SUMS")
            if sorted_sums.get(name) != sha256(reference_sorted(committed, layout, descr)):
                failures.append(f"{name}: sorted sha256 does not match SHA256SUMS.sorted")
            if shlex.join(command(name, args_)) not in readme:
                failures.append(f"{name}: README.md does not show its command")
            if len(committed) >= 1 << 20:
                failures.append(f"{name}: {len(committed)} bytes, over 1 MiB")
    for f in failures:
        print(f"FAILED: {f}")
    print(f"{len(SAMPLES) - len({f.split(':')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
