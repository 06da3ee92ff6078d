# tests/python/conftest.py - what the Python module's tests share: where things are, the txlc
# executable to compare with, a safetensors reader, and the docs/ERRORS.md table.
#
# ctest runs these with PYTHONPATH=build/python (the module just built, not an installed one) and
# TXLC_EXECUTABLE=build/tools/txlc; by hand:
#   PYTHONPATH=build/python TXLC_EXECUTABLE=build/tools/txlc /usr/bin/python3 -m pytest tests/python
import json
import os
import re
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

SOURCE = Path(__file__).resolve().parents[2]
MODELS = SOURCE / "models"
TESTS = SOURCE / "tests"
TXLC = os.environ.get("TXLC_EXECUTABLE", str(SOURCE / "build" / "tools" / "txlc"))

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "F16": np.float16}


def read_safetensors(path):
    """The tensors of a safetensors file as NumPy arrays, and its metadata."""
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[base + begin : base + end], dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])
    return out, meta


def run_txlc(*args, cwd=None, check=True):
    """Runs the txlc executable; returns the completed process (stdout, stderr as text)."""
    r = subprocess.run([TXLC, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"txlc {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr}")
    return r


def txlc_json(*args, cwd=None):
    return json.loads(run_txlc(*args, "--json", cwd=cwd).stdout)


def error_table():
    """docs/ERRORS.md's rows: id -> the message after 'txlc: error: ' (as a regex: '…' is any text)."""
    rows = {}
    for line in (SOURCE / "docs" / "ERRORS.md").read_text().splitlines():
        cells = [c.strip() for c in line.split(" | ")]
        if len(cells) < 4 or not line.startswith("| "):
            continue
        row = cells[0].lstrip("| ").strip()
        message = cells[-1].rstrip(" |").strip()
        if message.startswith("`txlc: error: ") and message.endswith("`"):
            rows[row] = message[len("`txlc: error: ") : -1]
    return rows


def message_pattern(expected):
    return "^" + ".*".join(re.escape(part) for part in expected.split("…")) + "$"


@pytest.fixture(scope="session")
def txlc():
    import txlc as module

    return module


@pytest.fixture(scope="session")
def kjv_char(txlc):
    return txlc.load(MODELS / "kjv-char")


@pytest.fixture(scope="session")
def tiny(txlc):
    """The tiny_base conformance model (n_token 97) as a spec file with its weights."""
    return txlc.load(spec_file("tiny_base"), weights=TESTS / "conformance" / "tiny_base" / "weights.safetensors")


_SPEC_DIR = None


def spec_file(case):
    """A spec file of an authors' conformance case's inline config (written once per run)."""
    global _SPEC_DIR
    import tempfile

    if _SPEC_DIR is None:
        _SPEC_DIR = Path(tempfile.mkdtemp(prefix="txlc-pytest-"))
    path = _SPEC_DIR / f"{case}.json"
    if not path.exists():
        config = json.loads((TESTS / "conformance" / case / "case.json").read_text())["config"]
        path.write_text(json.dumps(config))
    return path
