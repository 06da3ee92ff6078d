# tests/python/test_api.py - the rest of the module's surface: load's forms, the setting keywords,
# encode/decode, inspect against `txlc inspect`, compile to an artifact and a standalone executable,
# docstrings and the type stub.
import inspect as pyinspect
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import txlc

from conftest import MODELS, TESTS, run_txlc, spec_file, txlc_json


def test_model_properties_and_setting(txlc, kjv_char):
    assert kjv_char.n_token == 73 and kjv_char.n_layer == 4 and kjv_char.d_model == 128
    assert kjv_char.vocabulary == "char" and kjv_char.semantics == "authors"
    assert len(kjv_char.model_id) == 16
    assert kjv_char.spec["n_token"] == 73
    s = kjv_char.setting
    assert (s["batch"], s["qlen"], s["mem_len"], s["backend"], s["memory"]) == (1, 64, 64, "onednn", "kv")
    # The command line's default: the physical cores txlc --version reports, or
    # OpenMP's default (0) when OMP_NUM_THREADS is set.
    cores = int(re.search(r"(\d+) physical cores", run_txlc("--version").stdout).group(1))
    assert s["threads"] == (0 if os.environ.get("OMP_NUM_THREADS") else cores)
    assert "cache-projected-memory" in s["passes"]
    t = kjv_char.setting_for(batch=3, mem_len=0, memory="hidden", disable_pass=["fuse-attention"], passes=None)
    assert (t["batch"], t["mem_len"], t["memory"]) == (3, 0, "hidden")
    assert "fuse-attention" not in t["passes"] and "cache-projected-memory" not in t["passes"]
    assert set(txlc.SETTING_KEYS) >= {"batch", "qlen", "mem_len", "clamp_len", "same_length", "threads", "backend",
                                      "passes", "initial_memory"}
    assert "kjv-char" in repr(kjv_char)


def test_encode_decode_round_trip(txlc, kjv_char):
    text = "In the beginning God created the heaven and the earth.\n"
    ids = kjv_char.encode(text)
    assert ids.dtype == np.int64 and len(ids) == len(text)
    assert kjv_char.decode(ids) == text and kjv_char.decode(ids.tolist()) == text
    words = txlc.load(MODELS / "kjv-words")
    w = words.encode("In the beginning\n")
    assert words.decode(w) == "In the beginning\n"
    assert len(words.encode("In the beginning", eos_at_end=False)) == len(w) - 1
    with pytest.raises(txlc.InputError, match="outside"):
        kjv_char.decode([0, 73])


def test_score_accepts_ids_and_paths(kjv_char):
    text = (MODELS / "kjv-char" / "valid.txt").read_text()[:3000]
    from_text = kjv_char.score(text, text=True)
    from_ids = kjv_char.score(kjv_char.encode(text))
    for k in ["tokens", "nll_sum", "perplexity"]:
        assert from_text[k] == from_ids[k]
    assert "bits_per_char" in from_text and "bits_per_char" not in from_ids  # ids are not characters
    per = kjv_char.score(text, text=True, per_token=True)["per_token_nll"]
    assert per.dtype == np.float32 and len(per) == from_text["tokens"]
    assert abs(float(per.astype(np.float64).sum()) - from_text["nll_sum"]) < 1e-3


def test_reference_backend_and_hidden_memory_agree_with_the_default(tiny):
    t = np.random.default_rng(1).integers(0, 97, size=(6, 2))
    a = tiny.session(batch=2).forward(t).logprob
    for setting in [{"backend": "reference"}, {"memory": "hidden"}, {"passes": "none"}]:
        assert np.allclose(tiny.session(batch=2, **setting).forward(t).logprob, a, atol=1e-4), setting


@pytest.mark.parametrize("stage,fmt", [("input", "text"), ("optimized", "text"), ("optimized", "dot")])
def test_inspect_prints_what_txlc_inspect_prints(kjv_char, stage, fmt):
    got = kjv_char.inspect(stage, fmt, qlen=8, mlen=16)
    cli = run_txlc("inspect", MODELS / "kjv-char", "--stage", stage, "--format", fmt, "--qlen", 8, "--mlen", 16)
    assert got == cli.stdout


@pytest.mark.parametrize("outputs", ["nll", "logprob", "hidden"])
def test_inspect_outputs_as_txlc_inspect(kjv_char, outputs):
    got = kjv_char.inspect(qlen=8, outputs=outputs)
    assert got == run_txlc("inspect", MODELS / "kjv-char", "--qlen", 8, "--outputs", outputs).stdout
    assert got != kjv_char.inspect(qlen=8)  # the default has both outputs
    with pytest.raises(txlc.SettingError, match="^--outputs: expected 'logprob,nll', 'nll', 'logprob' or 'hidden'"):
        kjv_char.inspect(outputs="all")


def test_inspect_json_and_stats(kjv_char):
    g = kjv_char.inspect("optimized", "json", qlen=8)
    cli = json.loads(run_txlc("inspect", MODELS / "kjv-char", "--format", "json", "--qlen", 8).stdout)
    assert g == cli
    stats = kjv_char.inspect(format="json", stats=True)
    assert stats["optimized"]["flops_per_segment"] < stats["input"]["flops_per_segment"]
    assert stats == json.loads(run_txlc("inspect", MODELS / "kjv-char", "--stats", "--format", "json").stdout)
    assert kjv_char.inspect(stats=True) == run_txlc("inspect", MODELS / "kjv-char", "--stats").stdout


def test_compile_artifact_and_executable(txlc, kjv_char, tmp_path):
    summary = txlc.compile(kjv_char, tmp_path / "k.txla", qlen=32, mem_len=32)
    assert summary["emit"] == "artifact" and summary["qlen"] == 32 and summary["artifact_bytes"] > 0
    art = txlc.load(tmp_path / "k.txla")
    assert art.model_id == kjv_char.model_id and art.setting["qlen"] == 32
    text = (MODELS / "kjv-char" / "valid.txt").read_text()[:4000]
    assert art.score(text, text=True)["nll_sum"] == kjv_char.score(text, text=True, qlen=32, mem_len=32)["nll_sum"]

    exe = tmp_path / "kjv"
    s = txlc.compile(MODELS / "kjv-char", exe, "exe", qlen=32, mem_len=32)
    assert s["emit"] == "exe"
    r = subprocess.run([str(exe), "generate", "--prompt", "In the", "-n", "20", "--seed", "4", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"] == art.generate("In the", 20, seed=4, stream=False)


def test_help_says_shapes_and_dtypes(txlc):
    doc = txlc.Session.forward.__doc__
    for words in ["int64", "[qlen, batch]", "float32", "[qlen, batch, d_model]", "[qlen, batch, n_token]", "GIL"]:
        assert words in doc, words
    for f in [txlc.load, txlc.compile, txlc.Model.score, txlc.Model.generate, txlc.Model.inspect,
              txlc.Model.session, txlc.Session.state, txlc.Session.load_state, txlc.Session.nll]:
        assert f.__doc__ and len(f.__doc__) > 80, f


def test_the_type_stub_sits_beside_the_module_and_covers_it(txlc):
    stub = Path(txlc.__file__).with_name("txlc.pyi")
    assert stub.exists()
    text = stub.read_text()
    names = [n for n in dir(txlc) if not n.startswith("_")]
    for n in names:
        assert f"def {n}(" in text or f"class {n}(" in text or f"class {n}:" in text or f"{n}:" in text, n
    for cls in [txlc.Model, txlc.Session, txlc.Generation, txlc.Output]:
        for member in [m for m in vars(cls) if not m.startswith("_")]:
            assert f"def {member}(" in text or f"{member}:" in text, f"{cls.__name__}.{member}"


def test_precision_keyword(txlc, kjv_char):
    assert kjv_char.setting["precision"] == "f32"
    assert "precision" in txlc.SETTING_KEYS
    bf16 = kjv_char.setting_for(precision="bf16")
    assert bf16["precision"] == "bf16" and bf16["passes"][-2:] == ["bf16-matmuls", "bf16-state"]
    text = MODELS / "kjv-char" / "valid.txt"
    f32 = kjv_char.score(text)["nll_per_token"]
    low = kjv_char.score(text, precision="bf16")
    assert low["precision"] == "bf16"
    assert low["nll_per_token"] != f32 and abs(low["nll_per_token"] / f32 - 1) < 0.005
    int8 = kjv_char.setting_for(precision="int8")
    assert int8["precision"] == "int8" and int8["passes"][-2:] == ["int8-matmuls", "bf16-state"]
    low = kjv_char.score(text, precision="int8")
    assert low["precision"] == "int8"
    assert low["nll_per_token"] != f32 and abs(low["nll_per_token"] / f32 - 1) < 0.01
    with pytest.raises(txlc.SettingError, match="expected f32, bf16 or int8, got 'fp16'"):
        kjv_char.setting_for(precision="fp16")


def test_thread_policy_keyword(txlc, kjv_char, tmp_path):
    # --thread-policy as the keyword thread_policy: load()'s default for every call, overridden per call.
    assert "thread_policy" in txlc.SETTING_KEYS
    assert kjv_char.setting["thread_policy"] == "auto"
    loaded = txlc.load(MODELS / "kjv-char", thread_policy="loaded", threads=2)
    assert loaded.setting["thread_policy"] == "loaded"
    assert loaded.setting_for(thread_policy="idle")["thread_policy"] == "idle"
    assert loaded.session(thread_policy="idle").setting["thread_policy"] == "idle"
    assert loaded.session().setting["thread_policy"] == "loaded"
    # The figures are the command line's with the same policy and threads.
    text = tmp_path / "valid.txt"
    text.write_text((MODELS / "kjv-char" / "valid.txt").read_text()[:4000])
    cli = txlc_json("score", MODELS / "kjv-char", text, "--thread-policy", "loaded", "--threads", "2")
    assert loaded.score(text)["nll_sum"] == pytest.approx(cli["nll_sum"], rel=1e-6)
    assert loaded.score(text, thread_policy="idle")["nll_sum"] == pytest.approx(cli["nll_sum"], rel=1e-5)
    # compile() takes it as the command's flag does.
    s = txlc.compile(MODELS / "kjv-char", tmp_path / "a.txla", thread_policy="idle", qlen=32, mem_len=32)
    assert s["emit"] == "artifact" and (tmp_path / "a.txla").exists()
    # Refused as the command line refuses it, naming the flag.
    with pytest.raises(txlc.SettingError, match=r"--thread-policy: expected auto, idle or loaded, got 'busy'"):
        txlc.load(MODELS / "kjv-char", thread_policy="busy")
    with pytest.raises(txlc.SettingError, match=r"--thread-policy: expected a str, got int"):
        kjv_char.setting_for(thread_policy=1)
    with pytest.raises(txlc.SettingError, match=r"--thread-policy: expected auto, idle or loaded"):
        txlc.compile(MODELS / "kjv-char", tmp_path / "b.txla", thread_policy="Loaded")
    assert not (tmp_path / "b.txla").exists()
