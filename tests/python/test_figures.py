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
