#!/usr/bin/env python3
"""Benchmark harness: gpusort against the I/O floor, cp and its peers, on the same files.

For each size x distribution the input is generated once with gpusort-datagen; then each
contender runs --repeat times (the median is reported) with the input in the page cache and
no output left over between runs. Every sort's output is checked with gpusort-validate against
the input; a failed check shows in the table. Writes results.csv, results.md (a Markdown table
with time, GB/s and the ratio to the I/O floor, under a header naming the machine) and
results.png (time per contender per size) into --results, and prints the table last.

Contenders:
  iofloor       gpusort-iofloor's best read + write path, measured end to end
  cp            cp IN OUT (--reflink=never where cp knows it: a real copy)
  gpusort-cpu   gpusort --devices none
  gpusort-gpu   gpusort with its defaults (only when `nvidia-smi -L` finds a GPU)
  tbbsort       gpusort-peer-tbbsort (fread, tbb::parallel_sort, fwrite; u64 only)
  cubsort       gpusort-peer-cubsort (cudaMemcpy + CUB SortKeys; u64 only, GPU only)
  numpy         numpy_sort.py (when numpy imports)
  cupy          cupy_sort.py (when cupy imports and a GPU is present)
Contenders that cannot run are listed as not available, with the reason. Only the standard
library is needed; matplotlib (else gnuplot) draws the plot when present.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

KEY_SIZES = {"u32": 4, "u64": 8, "i32": 4, "i64": 8, "f32": 4, "f64": 8}
UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGTB]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"bad size '{text}' (expected e.g. 256M, 1G, 1.5G)")
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def size_label(n: int) -> str:
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        v = n / scale
        if v >= 1 and abs(v - round(v, 2)) < 1e-9:
            return f"{v:g}{unit}"
    return f"{n}B"


def run_quiet(cmd: list[str], timeout: float = 60) -> tuple[int, str]:
    """Runs a helper command; returns (exit status, stdout) and never raises."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout
    except (OSError, subprocess.SubprocessError):
        return -1, ""


# --- the machine ---------------------------------------------------------------------------

def machine_info(bin_gpusort: Optional[Path]) -> dict[str, str]:
    info: dict[str, str] = {}
    info["host"] = socket.gethostname()
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["cpu"] = cpu
    info["cores"] = str(os.cpu_count() or "?")
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                kib = int(line.split()[1])
                info["memory"] = f"{kib / (1 << 20):.1f} GiB"
                break
    except (OSError, ValueError):
        info["memory"] = "unknown"
    rc, out = run_quiet(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                         "--format=csv,noheader"])
    info["gpu"] = "; ".join(l.strip() for l in out.splitlines() if l.strip()) if rc == 0 else "none"
    info["kernel"] = platform.release()
    info["date"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    rc, out = run_quiet(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"])
    commit = out.strip() if rc == 0 and out.strip() else "unknown"
    if commit != "unknown":
        rc, out = run_quiet(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
        if rc == 0 and out.strip():
            commit += " (with uncommitted changes)"
    info["commit"] = commit
    if bin_gpusort is not None:
        rc, out = run_quiet([str(bin_gpusort), "--version"], timeout=20)
        info["gpusort"] = out.strip().splitlines()[0] if rc == 0 and out.strip() else "present"
    else:
        info["gpusort"] = "not found"
    return info


def gpu_present() -> bool:
    rc, out = run_quiet(["nvidia-smi", "-L"])
    return rc == 0 and "GPU" in out


def python_module(name: str) -> Optional[str]:
    """None when `import name` works in this Python, else the reason it does not."""
    rc = subprocess.run([sys.executable, "-c", f"import {name}"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
    if rc.returncode == 0:
        return None
    last = (rc.stderr.strip().splitlines() or ["import failed"])[-1]
    return f"python module {name} not importable ({last})"


def find_program(bin_dir: Path, name: str) -> Optional[Path]:
    """bin_dir/name, else the first match below bin_dir (a build tree) up to 4 levels down."""
    direct = bin_dir / name
    if direct.is_file() and os.access(direct, os.X_OK):
        return direct
    for depth in range(1, 5):
        for p in sorted(bin_dir.glob("/".join(["*"] * depth) + "/" + name)):
            if p.is_file() and os.access(p, os.X_OK) and "CMakeFiles" not in p.parts:
                return p
    return None


def find_script(bin_dir: Path, name: str) -> Optional[Path]:
    for candidate in (bin_dir / name, HERE.parent / "peers" / name, HERE / name):
        if candidate.is_file():
            return candidate
    return find_program(bin_dir, name)


# --- contenders ----------------------------------------------------------------------------

@dataclass
class contender:
    name: str
    describe: str
    command: Optional[list[str]]  # with {in} and {out}; None for the I/O floor (special)
    sorts: bool = True            # its output is a sort to validate
    missing: Optional[str] = None  # why it is not available


@dataclass
class outcome:
    size: int
    distribution: str
    name: str
    status: str = "ok"            # ok, failed, skipped
    runs: list[float] = field(default_factory=list)
    validation: str = ""
    note: str = ""

    @property
    def median(self) -> Optional[float]:
        return statistics.median(self.runs) if self.runs else None


def build_contenders(args, bins: dict[str, Optional[Path]], has_gpu: bool) -> list[contender]:
    t = args.type
    cs: list[contender] = []
    cs.append(contender("iofloor", "gpusort-iofloor: best read + write path, end to end", None,
                        sorts=False,
                        missing=None if bins["gpusort-iofloor"] else "gpusort-iofloor not found"))
    cp = shutil.which("cp")
    cp_cmd = [cp or "cp"]
    rc, out = run_quiet([cp or "cp", "--help"])
    if "--reflink" in out:
        cp_cmd.append("--reflink=never")
    cs.append(contender("cp", " ".join(cp_cmd) + " IN OUT", cp_cmd + ["{in}", "{out}"],
                        sorts=False, missing=None if cp else "cp not found"))
    g = bins["gpusort"]
    extra = args.gpusort_args.split() if args.gpusort_args else []
    g_missing = None if g else f"gpusort not found in {args.bin_dir}"
    cs.append(contender("gpusort-cpu", "gpusort --devices none",
                        [str(g), "--type", t, "--devices", "none", *extra, "{in}", "-o", "{out}"],
                        missing=g_missing))
    if has_gpu:
        cs.append(contender("gpusort-gpu", "gpusort (GPU, defaults)",
                            [str(g), "--type", t, *extra, "{in}", "-o", "{out}"],
                            missing=g_missing))
    else:
        cs.append(contender("gpusort-gpu", "gpusort (GPU, defaults)", None,
                            missing="no GPU (nvidia-smi -L found none)"))
    tb = bins["gpusort-peer-tbbsort"]
    cs.append(contender("tbbsort", "fread + tbb::parallel_sort + fwrite",
                        [str(tb), "{in}", "{out}"],
                        missing=("u64 keys only" if t != "u64" else
                                 None if tb else "gpusort-peer-tbbsort not found")))
    cb = bins["gpusort-peer-cubsort"]
    cb_missing = ("u64 keys only" if t != "u64" else
                  "no GPU (nvidia-smi -L found none)" if not has_gpu else
                  None if cb else "gpusort-peer-cubsort not found (built only with CUDA)")
    cs.append(contender("cubsort", "cudaMemcpy + cub::DeviceRadixSort::SortKeys",
                        [str(cb), "{in}", "{out}"], missing=cb_missing))
    np_script = find_script(args.bin_dir, "numpy_sort.py")
    np_missing = python_module("numpy") or (None if np_script else "numpy_sort.py not found")
    cs.append(contender("numpy", "np.fromfile + np.sort + tofile",
                        [sys.executable, str(np_script), "--dtype", t, "{in}", "{out}"],
                        missing=np_missing))
    cp_script = find_script(args.bin_dir, "cupy_sort.py")
    cupy_missing = ("no GPU (nvidia-smi -L found none)" if not has_gpu else
                    python_module("cupy") or (None if cp_script else "cupy_sort.py not found"))
    cs.append(contender("cupy", "cp.asarray + cp.sort + cp.asnumpy",
                        [sys.executable, str(cp_script), "--dtype", t, "{in}", "{out}"],
                        missing=cupy_missing))
    if args.contenders:
        wanted = set(args.contenders.split(","))
        cs = [c for c in cs if c.name in wanted]
    return cs


# --- running -------------------------------------------------------------------------------

def warm(path: Path) -> None:
    """Reads the file once so that the timed runs find it in the page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(64 << 20):
            pass


def remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def last_line(text: str) -> str:
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


class bench:
    def __init__(self, args, bins: dict[str, Optional[Path]]):
        self.args = args
        self.bins = bins
        self.log_dir = args.work_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_serial = 0

    def log_file(self, label: str) -> Path:
        self.log_serial += 1
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
        return self.log_dir / f"{self.log_serial:04d}-{safe}.log"

    def execute(self, cmd: list[str], label: str, timeout: float) -> tuple[int, float, str]:
        """Runs cmd; returns (status, wall seconds, combined output). Never raises."""
        log_path = self.log_file(label)
        start = time.perf_counter()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", timeout=timeout)
            seconds = time.perf_counter() - start
            rc, text = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            seconds = time.perf_counter() - start
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc, text = 124, out + f"\n(timed out after {timeout:.0f} s)"
        except OSError as e:
            seconds = time.perf_counter() - start
            rc, text = 127, f"cannot run {cmd[0]}: {e}"
        log_path.write_text("$ " + " ".join(cmd) + f"\n(exit {rc}, {seconds:.3f} s)\n" + text)
        return rc, seconds, text

    def validate(self, inp: Path, out: Path) -> tuple[bool, str]:
        v = self.bins["gpusort-validate"]
        rc, _, text = self.execute([str(v), "--type", self.args.type, "-q", str(inp), str(out)],
                                   "validate", self.args.timeout)
        if rc == 0:
            return True, "ok"
        if rc == 1:
            failed = [l.split("FAILED: ", 1)[1].strip() for l in text.splitlines() if "FAILED: " in l]
            return False, "failed: " + ("; ".join(failed) if failed else last_line(text))
        return False, f"validator trouble (exit {rc}): " + last_line(text)

    def generate(self, size: int, dist: str) -> tuple[Optional[Path], str]:
        key = KEY_SIZES[self.args.type]
        count = size // key
        path = self.args.work_dir / f"input-{self.args.type}-{re.sub('[^A-Za-z0-9.]', '_', dist)}-{size_label(size)}.bin"
        cmd = [str(self.bins["gpusort-datagen"]), "--type", self.args.type, "--count", str(count),
               "--distribution", dist, "--seed", str(self.args.seed), "-o", str(path)]
        rc, seconds, text = self.execute(cmd, f"datagen-{dist}-{size_label(size)}",
                                         self.args.timeout)
        if rc != 0:
            remove(path)
            return None, f"gpusort-datagen failed (exit {rc}): {last_line(text)}"
        return path, f"generated in {seconds:.2f} s"

    def run_iofloor(self, inp: Path, out: Path, size: int, dist: str) -> outcome:
        res = outcome(size, dist, "iofloor")
        warm(inp)
        cmd = [str(self.bins["gpusort-iofloor"]), "--json", "--repeat", str(self.args.repeat),
               str(inp), str(out)]
        rc, _, text = self.execute(cmd, f"iofloor-{dist}-{size_label(size)}",
                                   self.args.timeout * (self.args.repeat * 12 + 3))
        remove(out)
        if rc != 0:
            res.status = "failed"
            res.note = f"exit {rc}: {last_line(text)}"
            return res
        try:
            data = json.loads(text[text.index("{"):])
            # Every variant's numbers, for a closer look than the one row in the table.
            dump = self.args.results / f"iofloor-{re.sub('[^A-Za-z0-9.]', '_', dist)}-{size_label(size)}.json"
            dump.write_text(json.dumps(data, indent=2) + "\n")
            res.runs = [float(x) for x in data["floor"]["runs_s"]]
            best = data["best"]
            res.note = (f"read {best['read']} {best['read_s']:.3f} s + write {best['write']} "
                        f"{best['write_s']:.3f} s")
            res.validation = "copy (not a sort)"
        except (ValueError, KeyError, TypeError) as e:
            res.status = "failed"
            res.note = f"cannot parse gpusort-iofloor --json output: {e}"
        return res

    def run_contender(self, c: contender, inp: Path, out: Path, size: int, dist: str) -> outcome:
        if c.command is None:
            return self.run_iofloor(inp, out, size, dist)
        res = outcome(size, dist, c.name)
        cmd = [str(inp) if a == "{in}" else str(out) if a == "{out}" else a for a in c.command]
        problems: list[str] = []
        for r in range(self.args.repeat):
            warm(inp)
            remove(out)
            rc, seconds, text = self.execute(cmd, f"{c.name}-{dist}-{size_label(size)}-{r}",
                                             self.args.timeout)
            if rc != 0:
                res.status = "failed"
                res.note = f"exit {rc}: {last_line(text)}"
                remove(out)
                break  # a contender that fails once is not run again on this input
            res.runs.append(seconds)
            if c.sorts:
                ok, why = self.validate(inp, out)
                if not ok:
                    problems.append(why.replace(str(out), "OUT"))
            remove(out)
        if c.sorts and res.runs:
            if problems:
                first = problems[0]
                res.validation = f"{len(problems)} of {len(res.runs)} runs {first}"
            else:
                res.validation = "ok"
            if problems:
                res.status = "invalid"
        elif not c.sorts:
            res.validation = "copy (not a sort)"
        return res


# --- reports -------------------------------------------------------------------------------

def fmt(v: Optional[float], digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def floor_of(results: list[outcome], size: int, dist: str) -> Optional[float]:
    for r in results:
        if r.size == size and r.distribution == dist and r.name == "iofloor" and r.status == "ok":
            return r.median
    return None


def table_rows(results: list[outcome]) -> list[dict[str, str]]:
    rows = []
    for r in results:
        floor = floor_of(results, r.size, r.distribution)
        med = r.median
        gbps = r.size / med / 1e9 if med else None
        ratio = med / floor if med and floor else None
        rows.append({
            "size": size_label(r.size), "size_bytes": str(r.size), "distribution": r.distribution,
            "contender": r.name, "status": r.status, "median_s": fmt(med, 4),
            "gb_per_s": fmt(gbps, 2), "x_floor": fmt(ratio, 2),
            "runs_s": " ".join(f"{x:.4f}" for x in r.runs), "validation": r.validation,
            "note": r.note,
        })
    return rows


def markdown_table(rows: list[dict[str, str]]) -> str:
    head = ["size", "distribution", "contender", "median s", "GB/s", "x I/O floor", "runs",
            "validation", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        status = "" if row["status"] == "ok" else f"**{row['status']}** "
        cells = [row["size"], row["distribution"], row["contender"],
                 row["median_s"], row["gb_per_s"], row["x_floor"],
                 str(len(row["runs_s"].split())) if row["runs_s"] else "0",
                 status + row["validation"], row["note"]]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict[str, str]], type_name: str) -> None:
    fields = ["size", "size_bytes", "distribution", "type", "contender", "status", "median_s",
              "gb_per_s", "x_floor", "runs_s", "validation", "note"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for row in rows:
            w.writerow({**row, "type": type_name})


def plot(path: Path, results: list[outcome], dists: list[str]) -> str:
    """Draws time per contender per size; returns a note saying how (or why not)."""
    series: dict[str, dict[str, list[tuple[float, float]]]] = {d: {} for d in dists}
    for r in results:
        if r.median is not None and r.status in ("ok", "invalid"):
            series[r.distribution].setdefault(r.name, []).append((r.size / (1 << 30), r.median))
    if not any(series.values()):
        return "no plot: no contender produced a time"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(dists), figsize=(6 * len(dists), 4.5), squeeze=False)
        for ax, d in zip(axes[0], dists):
            for name, pts in sorted(series[d].items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            ax.set_title(f"distribution {d}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")  # floor and sorts differ by orders of magnitude
            ax.set_xlabel("input size (GiB)")
            ax.set_ylabel("median time (s)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        return "plot drawn with matplotlib"
    except ImportError:
        pass
    except Exception as e:  # a broken matplotlib install: try gnuplot
        log(f"run_bench: matplotlib failed ({e}); trying gnuplot")
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "no plot: neither matplotlib nor gnuplot is installed"
    data_dir = path.parent / "plot-data"
    data_dir.mkdir(exist_ok=True)
    script = [f"set terminal pngcairo size {560 * len(dists)},420 noenhanced",
              f"set output '{path}'", f"set multiplot layout 1,{len(dists)}",
              "set key top left", "set grid", "set logscale x 2", "set logscale y",
              "set xlabel 'input size (GiB)'",
              "set ylabel 'median time (s)'"]
    for i, d in enumerate(dists):
        plots = []
        for j, (name, pts) in enumerate(sorted(series[d].items())):
            f = data_dir / f"{i}-{j}.dat"
            f.write_text("".join(f"{x} {y}\n" for x, y in sorted(pts)))
            plots.append(f"'{f}' using 1:2 with linespoints title '{name}'")
        script.append(f"set title 'distribution {d}'")
        script.append("plot " + ", ".join(plots) if plots else "plot 0 notitle")
    script.append("unset multiplot")
    (data_dir / "plot.gp").write_text("\n".join(script) + "\n")
    rc = subprocess.run([gnuplot, str(data_dir / "plot.gp")], stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
    if rc.returncode != 0 or not path.exists():
        return f"no plot: gnuplot failed: {last_line(rc.stderr)}"
    return "plot drawn with gnuplot (matplotlib is not installed)"


def write_markdown(path: Path, info: dict[str, str], args, rows: list[dict[str, str]],
                   missing: list[contender], described: list[contender], plot_note: str,
                   skipped: list[str]) -> str:
    lines = ["# gpusort benchmark", "",
             f"- machine: {info['host']}: {info['cpu']}, {info['cores']} cores, "
             f"{info['memory']} memory, kernel {info['kernel']}",
             f"- GPU: {info['gpu']}",
             f"- date: {info['date']}",
             f"- git commit: {info['commit']}; gpusort: {info['gpusort']}",
             f"- keys: {args.type}; sizes: {args.sizes}; distributions: {args.distributions}; "
             f"median of {args.repeat} runs; seed {args.seed}",
             "- times are wall-clock seconds of the whole command (read, sort, write); the input "
             "is in the page cache and the output is removed between runs; GB/s is input bytes "
             "per second; 'x I/O floor' is the time divided by the I/O floor's time on the same "
             "file (gpusort-iofloor: best read + best write path, end to end)",
             "", markdown_table(rows), ""]
    lines.append("Contenders:")
    for c in described:
        lines.append(f"- {c.name}: {c.describe}")
    if missing:
        lines += ["", "Not available:"]
        for c in missing:
            lines.append(f"- {c.name}: not available: {c.missing}")
    if skipped:
        lines += ["", "Skipped inputs:"]
        lines += [f"- {s}" for s in skipped]
    lines += ["", f"Plot: results.png ({plot_note}). Raw data: results.csv; every I/O floor "
              f"variant: iofloor-*.json; command logs: {args.work_dir / 'logs'}.", ""]
    text = "\n".join(lines)
    path.write_text(text)
    return text


# --- main ----------------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--sizes", default="1G", help="comma-separated input sizes (256M,1G,8G)")
    p.add_argument("--distributions", default="uniform",
                   help="comma-separated gpusort-datagen distributions (uniform,and:3,zipf:0.75)")
    p.add_argument("--type", default="u64", choices=sorted(KEY_SIZES), help="key type")
    p.add_argument("--repeat", type=int, default=3, help="runs per contender (median)")
    p.add_argument("--bin-dir", type=Path, required=True,
                   help="directory with gpusort and the tools (an install's bin/ or a build tree)")
    p.add_argument("--work-dir", type=Path, required=True,
                   help="scratch directory for inputs, outputs and logs (needs ~3x the largest size)")
    p.add_argument("--results", type=Path, required=True, help="directory for the results")
    p.add_argument("--seed", type=int, default=1, help="gpusort-datagen seed")
    p.add_argument("--timeout", type=float, default=1800, help="seconds allowed per command")
    p.add_argument("--contenders", default="",
                   help="comma-separated subset: iofloor,cp,gpusort-cpu,gpusort-gpu,tbbsort,"
                        "cubsort,numpy,cupy (default all)")
    p.add_argument("--gpusort-args", default="", help="extra arguments for every gpusort run")
    p.add_argument("--keep-inputs", action="store_true", help="keep the generated inputs")
    args = p.parse_args()

    try:
        sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError as e:
        p.error(str(e))
    dists = [d.strip() for d in args.distributions.split(",") if d.strip()]
    key = KEY_SIZES[args.type]
    for s in sizes:
        if s % key:
            p.error(f"size {s} is not a multiple of the {key}-byte key")
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    args.bin_dir = args.bin_dir.resolve()
    args.work_dir = args.work_dir.resolve()
    args.results = args.results.resolve()
    try:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        args.results.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        log(f"run_bench: error: {e}")
        return 2

    names = ["gpusort", "gpusort-datagen", "gpusort-validate", "gpusort-iofloor",
             "gpusort-peer-tbbsort", "gpusort-peer-cubsort"]
    bins = {n: find_program(args.bin_dir, n) for n in names}
    for required in ("gpusort-datagen", "gpusort-validate"):
        if bins[required] is None:
            log(f"run_bench: error: {required} not found in {args.bin_dir}")
            return 2

    has_gpu = gpu_present()
    info = machine_info(bins["gpusort"])
    contenders = build_contenders(args, bins, has_gpu)
    available = [c for c in contenders if c.missing is None]
    missing = [c for c in contenders if c.missing is not None]
    log(f"run_bench: {info['cpu']}, {info['cores']} cores, GPU: {info['gpu']}")
    log("run_bench: contenders: " + ", ".join(c.name for c in available) +
        ("; not available: " + ", ".join(f"{c.name} ({c.missing})" for c in missing)
         if missing else ""))

    b = bench(args, bins)
    results: list[outcome] = []
    skipped: list[str] = []
    out = args.work_dir / "output.bin"
    for size in sizes:
        for dist in dists:
            label = f"{size_label(size)} {dist}"
            free = shutil.disk_usage(args.work_dir).free
            if free < 2.2 * size:
                skipped.append(f"{label}: only {free / 2**30:.1f} GiB free in {args.work_dir}")
                log(f"run_bench: {label}: skipped, not enough disk space")
                continue
            inp, note = b.generate(size, dist)
            if inp is None:
                skipped.append(f"{label}: {note}")
                log(f"run_bench: {label}: {note}")
                continue
            try:
                for c in available:
                    res = b.run_contender(c, inp, out, size, dist)
                    results.append(res)
                    med = res.median
                    log(f"run_bench: {label}: {c.name}: {res.status}"
                        + (f", {med:.3f} s" if med is not None else "")
                        + (f" ({res.note})" if res.note and res.status != "ok" else "")
                        + (f" [{res.validation}]" if res.status == "invalid" else ""))
            finally:
                remove(out)
                if not args.keep_inputs:
                    remove(inp)

    rows = table_rows(results)
    write_csv(args.results / "results.csv", rows, args.type)
    plot_note = plot(args.results / "results.png", results, dists)
    write_markdown(args.results / "results.md", info, args, rows, missing,
                   [c for c in contenders if c.missing is None], plot_note, skipped)
    print(markdown_table(rows))
    for c in missing:
        print(f"not available: {c.name}: {c.missing}")
    for s in skipped:
        print(f"skipped: {s}")
    print(f"results: {args.results} ({plot_note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
