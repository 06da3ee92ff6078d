# tests/python/test_errors.py - the bad inputs of docs/ERRORS.md that apply to the module raise
# txlc.Error subclasses carrying the command line's message: the table's line after
# "txlc: error: " ('…' stands for text that depends on the machine or a hash), found in the table
# by its row id, so that the module cannot drift from what txlc says.
import json
import math
import re
import shutil
import struct

import numpy as np
import pytest

from conftest import MODELS, TESTS, error_table, message_pattern, run_txlc

TABLE = error_table()


def tiny_spec():
    return json.loads((TESTS / "conformance" / "tiny_base" / "case.json").read_text())["config"]


def spec_with(**changes):
    j = tiny_spec()
    for k, v in changes.items():
        if v is None:
            del j[k]
        else:
            j[k] = v
    return json.dumps(j)


def safetensors(header, data_bytes):
    while len(header) % 8:
        header += " "
    return struct.pack("<Q", len(header)) + header.encode() + b"\0" * data_bytes


def weights_with(tensor, element, value):
    from conftest import read_safetensors

    tensors, _ = read_safetensors(TESTS / "conformance" / "tiny_base" / "weights.safetensors")
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.array(tensors[name], dtype=np.float32)
        if name == tensor:
            a.reshape(-1)[element] = value
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header)
    while len(h) % 8:
        h += " "
    return struct.pack("<Q", len(h)) + h.encode() + b"".join(blobs)


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "spec.json").write_text(json.dumps(tiny_spec()))
    shutil.copy(TESTS / "conformance" / "tiny_base" / "weights.safetensors", d / "w.safetensors")
    run_txlc("compile", "spec.json", "--weights", "w.safetensors", "--passes", "none", "-o", "t.txla", cwd=d)
    run_txlc("compile", "spec.json", "--random-weights", "--passes", "none", "-o", "r.txla", cwd=d)
    run_txlc("run", "t.txla", "--tokens", "1 2 3", "--qlen", "6", "--state-out", "s.safetensors", cwd=d)
    return d


def expect(row, error_type, call):
    with pytest.raises(error_type) as e:
        call()
    assert isinstance(e.value, Exception)
    message = str(e.value)
    assert re.match(message_pattern(TABLE[row]), message), f"{row}: {message!r} is not {TABLE[row]!r}"


SPEC_ROWS = {
    "spec-syntax": '{"n_token": 97,, }',
    "spec-type": spec_with(d_head="8"),
    "spec-missing": spec_with(n_layer=None),
    "spec-zero": spec_with(d_head=0),
    "spec-negative": spec_with(n_head=-2),
    "spec-huge": spec_with(n_token=1 << 32),
    "spec-overflow": spec_with(n_head=2147483647, d_head=2147483647, d_model=2147483646),
    "spec-cutoffs": spec_with(cutoffs=[50, 20], tie_projs=[False, False, False]),
    "spec-cutoff-ntoken": spec_with(cutoffs=[97], tie_projs=[False, False]),
    "spec-div-val": spec_with(div_val=0),
    "spec-duplicate": '{"n_token": 97, "n_token": 98}',
    "spec-not-object": "[1, 2]",
}


@pytest.mark.parametrize("row", sorted(SPEC_ROWS))
def test_bad_spec(txlc, fixtures, monkeypatch, row):
    (fixtures / "bad.json").write_text(SPEC_ROWS[row])
    monkeypatch.chdir(fixtures)
    expect(row, txlc.InputError, lambda: txlc.load("bad.json", random_weights=True))


def test_missing_spec_and_too_big_random_weights(txlc, fixtures, monkeypatch):
    monkeypatch.chdir(fixtures)
    expect("spec-missing-file", txlc.InputError, lambda: txlc.load("nope.json", random_weights=True))
    (fixtures / "big.json").write_text(spec_with(n_token=1000, d_model=8192, d_embed=8192, n_head=64, d_head=128,
                                                 d_inner=65536, n_layer=12))
    expect("spec-ram", txlc.Error, lambda: txlc.compile("big.json", "out.txla", random_weights=True))


WEIGHT_ROWS = {
    "st-short": b"\x10\x00",
    "st-header-past-end": b"\xe8\x03\0\0\0\0\0\0{}",
    "st-header-not-json": safetensors('{"a": ]', 0),
    "st-header-not-object": safetensors("[1,2]", 0),
    "st-dtype": safetensors('{"x":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}}', 4),
    "st-shape-bytes": safetensors('{"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}}', 12),
    "st-out-of-range": safetensors('{"x":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}', 10),
    "st-overlap": safetensors('{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
                              '"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}', 24),
    "st-duplicate": safetensors('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                '"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8),
}


@pytest.mark.parametrize("row", sorted(WEIGHT_ROWS) + ["st-nan", "st-inf"])
def test_bad_weights(txlc, fixtures, monkeypatch, row):
    if row == "st-nan":
        data = weights_with("crit.out_layers.0.bias", 3, math.nan)
    elif row == "st-inf":
        data = weights_with("r_w_bias", 0, -math.inf)
    else:
        data = WEIGHT_ROWS[row]
    (fixtures / "bad.safetensors").write_bytes(data)
    monkeypatch.chdir(fixtures)
    expect(row, txlc.InputError, lambda: txlc.load("spec.json", weights="bad.safetensors"))


def test_bad_token_ids_and_text(txlc, fixtures, kjv_char, monkeypatch):
    monkeypatch.chdir(fixtures)
    m = txlc.load("t.txla")
    (fixtures / "ids.txt").write_text("1 2\n3 400\n")
    expect("ids-file-range", txlc.InputError, lambda: m.score("ids.txt", ids=True))
    (fixtures / "empty.txt").write_text("")
    expect("text-empty", txlc.InputError, lambda: kjv_char.score("empty.txt"))
    (fixtures / "odd.txt").write_text("In the beginning \u20ac\n")
    expect("text-symbol", txlc.InputError, lambda: kjv_char.score("odd.txt"))
    # Token arrays: the session's own check, naming the position.
    s = m.session(batch=1)
    with pytest.raises(txlc.InputError, match=r"^tokens: token id 97 at position 1"):
        s.forward(np.array([5, 97]))
    with pytest.raises(txlc.InputError, match=r"^tokens: token id -1 at position 0"):
        s.forward(np.array([-1]))
    with pytest.raises(txlc.InputError, match=r"^tokens: expected i64\[qlen >= 1, 1\]"):
        s.forward(np.zeros((0,), dtype=np.int64))
    with pytest.raises(txlc.InputError, match=r"^tokens: expected i64\[qlen >= 1, 1\], got i64\[3, ?2\]"):
        s.forward(np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(txlc.InputError, match="^tokens: expected an integer array"):
        s.forward(np.zeros((3,), dtype=np.float32))
    with pytest.raises(txlc.InputError, match=r"^tokens: expected an integer array \[qlen, batch\] or \[qlen\], got 3 dimensions"):
        s.forward(np.zeros((3, 1, 1), dtype=np.int64))
    with pytest.raises(txlc.InputError, match="^targets: expected the shape of tokens"):
        s.forward(np.array([1, 2]), np.array([1, 2, 3]))
    assert s.mlen == 0  # nothing ran


def bad_artifact(art, at, data):
    return art[:at] + data + art[at + len(data):]


def test_bad_artifacts(txlc, fixtures, monkeypatch):
    monkeypatch.chdir(fixtures)
    art = (fixtures / "t.txla").read_bytes()
    for row, data in [("artifact-truncated", art[: len(art) // 2]),
                      ("artifact-checksum", bad_artifact(art, len(art) // 2, b"\x5a\xa5")),
                      ("artifact-version", bad_artifact(art, 8, b"\x63\0\0\0")),
                      ("artifact-not", b"hello")]:
        (fixtures / "bad.txla").write_bytes(data)
        expect(row, txlc.InputError, lambda: txlc.load("bad.txla"))


def test_bad_state_files(txlc, fixtures, monkeypatch):
    monkeypatch.chdir(fixtures)
    other = txlc.load("r.txla").session(batch=1)
    expect("state-other-model", txlc.InputError, lambda: other.load_state("s.safetensors"))
    mine = txlc.load("t.txla").session(batch=1)
    expect("state-not-state", txlc.InputError, lambda: mine.load_state("w.safetensors"))
    with pytest.raises(txlc.InputError, match="^state: tensor 'mem.0' is missing"):
        mine.load_state({})
    mine.load_state("s.safetensors")
    assert mine.mlen == 3


def test_model_directory_without_config(txlc):
    expect("model-dir-no-config", txlc.InputError, lambda: txlc.load(TESTS / "conformance" / "nomem"))


def test_memory_that_cannot_fit(txlc, fixtures, monkeypatch):
    monkeypatch.chdir(fixtures)
    m = txlc.load("spec.json", weights="w.safetensors", qlen=1000000, mem_len=1000000)
    expect("plan-ram", txlc.SettingError, lambda: m.session())
    a = txlc.load("t.txla")
    expect("plan-ram-artifact", txlc.SettingError, lambda: a.session(qlen=1000000, mem_len=1000000))


def test_bad_settings(txlc, fixtures, monkeypatch):
    monkeypatch.chdir(fixtures)
    # The command-line rows, without the command line's " (run 'txlc --help')".
    usage = {r: TABLE[r].removesuffix(" (run 'txlc --help')") for r in ["cli-qlen-zero", "cli-batch-word", "cli-backend"]}
    with pytest.raises(txlc.SettingError) as e:
        txlc.load("t.txla", qlen=0)
    assert str(e.value) == usage["cli-qlen-zero"]
    with pytest.raises(txlc.SettingError) as e:
        txlc.load("t.txla").session(batch="two")
    assert str(e.value) == usage["cli-batch-word"]
    with pytest.raises(txlc.SettingError) as e:
        txlc.load("t.txla", backend="gpu")
    assert str(e.value) == usage["cli-backend"]
    with pytest.raises(txlc.SettingError, match="^--weights excludes --random-weights$"):
        txlc.load("spec.json", weights="w.safetensors", random_weights=True)
    with pytest.raises(txlc.SettingError, match=r"^session\(\): unknown setting 'qlne'; expected one of: batch, "):
        txlc.load("t.txla").session(qlne=3)
    with pytest.raises(txlc.SettingError, match="^--passes: t.txla is compiled with its pipeline"):
        txlc.load("t.txla").session(passes="none")
    with pytest.raises(txlc.SettingError, match="^unknown pass 'frob'|frob"):
        txlc.load("spec.json", weights="w.safetensors", disable_pass="frob")
    with pytest.raises(txlc.SettingError, match="^--memory: expected 'kv' or 'hidden', got 'ring'$"):
        txlc.load("spec.json", weights="w.safetensors", memory="ring")
    with pytest.raises(txlc.SettingError, match="^--same-length: expected a bool"):
        txlc.load("spec.json", weights="w.safetensors", same_length=1)
    with pytest.raises(txlc.SettingError, match=r"^--threads: expected a thread count in \[0, 4096\], got '-1'$"):
        txlc.load("spec.json", weights="w.safetensors", threads=-1)


def test_bad_sampling(txlc, kjv_char):
    with pytest.raises(txlc.SettingError, match=r"^--temperature: expected a number at least 0 \(0: greedy\), got '-1'$"):
        kjv_char.generate("In", 3, temperature=-1)
    with pytest.raises(txlc.SettingError, match=r"^--top-p: expected a number in \(0, 1\], got '1.5'$"):
        kjv_char.generate("In", 3, top_p=1.5)
    with pytest.raises(txlc.SettingError, match="^--greedy: excludes --temperature, --top-k and --top-p$"):
        kjv_char.generate("In", 3, greedy=True, top_k=3)
    with pytest.raises(txlc.InputError, match='^--prompt: expected text with at least one token, got ""$'):
        kjv_char.generate("", 3)


def test_every_error_is_a_txlc_error_and_a_value_error(txlc):
    assert issubclass(txlc.InputError, txlc.Error) and issubclass(txlc.InputError, ValueError)
    assert issubclass(txlc.SettingError, txlc.Error) and issubclass(txlc.SettingError, ValueError)
    assert issubclass(txlc.InternalError, txlc.Error)
