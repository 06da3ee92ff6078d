# tests/python/test_figures.py - the bundled models' figures through Model.score equal the command
# line's (`txlc score --json`, run here), the one-liner prints txlc score's figure, and the
# README's Python example runs as written.
import os
import subprocess
import sys

import pytest

from conftest import MODELS, SOURCE, txlc_json

# Every key of `txlc score --json` but the time it took (and the file as named).
SAME = ["tokens", "nll_sum", "nll_per_token", "perplexity", "bits_per_token", "batch", "qlen", "mem_len",
        "clamp_len", "same_length", "semantics", "initial_memory", "dropped", "segments"]


def test_done_when_one_liner_prints_txlc_scores_figure():
    # The command, as written, from the source tree.
    code = ("import txlc; m = txlc.load('models/kjv-char'); "
            "print(m.score('models/kjv-char/valid.txt')['bits_per_char'])")
    r = subprocess.run(["/usr/bin/python3", "-c", code], cwd=SOURCE, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    cli = txlc_json("score", "models/kjv-char", "models/kjv-char/valid.txt", cwd=SOURCE)
    assert r.stdout.strip() == repr(cli["bits_per_char"])
    assert abs(cli["bits_per_char"] - 2.117692) <= 1e-4  # models/kjv-char/README.md


def test_readme_python_example_runs_as_written():
    # README.md's "## Python" block, from the source tree: it runs, and its first line is the figure.
    readme = (SOURCE / "README.md").read_text()
    block = readme.split("## Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    r = subprocess.run(["/usr/bin/python3", "-c", block], cwd=SOURCE, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3, r.stdout
    assert abs(float(lines[0]) - 2.117692) <= 1e-4  # models/kjv-char/README.md
    assert lines[2].startswith("(16, ")  # 16 characters of "In the beginning", one row of log-probabilities each


def test_kjv_words_figures_equal_the_command_lines(txlc):
    m = txlc.load(MODELS / "kjv-words")
    got = m.score(MODELS / "kjv-words" / "valid.txt")
    cli = txlc_json("score", MODELS / "kjv-words", MODELS / "kjv-words" / "valid.txt")
    assert {k: got[k] for k in SAME} == {k: cli[k] for k in SAME}
    assert "bits_per_char" not in got
    assert abs(got["perplexity"] / 97.3513 - 1) <= 1e-4  # models/kjv-words/README.md


def test_kjv_char_setting_keywords_and_spec_file_form(txlc, tmp_path):
    # A spec file with weights= and vocab=, and the setting as keywords: --mem-len 0 --batch 2.
    d = MODELS / "kjv-char"
    m = txlc.load(d / "config.json", weights=d / "model.safetensors", vocab=d / "vocab.json")
    text = (d / "valid.txt").read_text()[:20000]
    got = m.score(text, mem_len=0, batch=2)
    path = tmp_path / "kjv-char-20000.txt"
    path.write_text(text)
    cli = txlc_json("score", d, path, "--mem-len", 0, "--batch", 2)
    assert {k: got[k] for k in SAME + ["bits_per_char"]} == {k: cli[k] for k in SAME + ["bits_per_char"]}
    assert got["file"] == "<text>" and got["mem_len"] == 0 and got["batch"] == 2


def test_a_list_of_texts_scores_each_as_the_command_line_does(txlc, kjv_char, tmp_path):
    # Model.score([text, ...]) -> one dict per text, in order: each text's `txlc score --json` figures.
    lines = [l for l in (MODELS / "kjv-char" / "valid.txt").read_text().splitlines() if len(l) > 40][:3]
    got = kjv_char.score(lines, threads=1)
    assert isinstance(got, list) and len(got) == len(lines)
    for i, line in enumerate(lines):
        path = tmp_path / f"text{i}.txt"
        path.write_text(line)
        cli = txlc_json("score", MODELS / "kjv-char", path, "--threads", 1)
        assert {k: got[i][k] for k in SAME} == {k: cli[k] for k in SAME}, i
    assert [g["tokens"] for g in got] == [kjv_char.score(l, text=True, threads=1)["tokens"] for l in lines]
    # A tuple is a list; per_token applies to each text.
    each = kjv_char.score(tuple(lines[:2]), per_token=True, threads=1)
    assert [len(e["per_token_nll"]) for e in each] == [g["tokens"] for g in got[:2]]
    # text=False: the strs are files.
    assert kjv_char.score([str(tmp_path / "text0.txt")], text=False, threads=1)[0]["tokens"] == got[0]["tokens"]
    # A list of int is still token ids; one that mixes str with others is refused.
    assert isinstance(kjv_char.score([5, 6, 7]), dict)
    with pytest.raises(TypeError, match="holds a int at index 1"):
        kjv_char.score(["In the beginning", 3])
