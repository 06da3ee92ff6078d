# tests/python/test_model_forms.py - txlc.load takes every form `txlc import` accepts: a checkpoint
# file scores as the folder it came from and as the model `txlc import` writes from it; any other
# file raises txlc.InputError with docs/ERRORS.md's line ("What MODEL is").
import re

import pytest

from conftest import MODELS, TESTS, error_table, message_pattern, run_txlc

TABLE = error_table()
CHECKPOINTS = TESTS / "data" / "checkpoints"
WORDS = "the , . of and in to a = the of the"


def expect(row, call):
    import txlc

    with pytest.raises(txlc.InputError) as e:
        call()
    assert re.match(message_pattern(TABLE[row]), str(e.value)), f"{row}: {str(e.value)!r} is not {TABLE[row]!r}"


@pytest.mark.parametrize("folder", ["hf_tiny", "hf_tiny_legacy"])
def test_pytorch_model_bin_scores_as_the_imported_model(txlc, tmp_path, folder):
    run_txlc("import", str(CHECKPOINTS / folder), "-o", str(tmp_path / "imported"))
    from_file = txlc.load(CHECKPOINTS / folder / "pytorch_model.bin").score(WORDS, text=True)
    imported = txlc.load(tmp_path / "imported").score(WORDS, text=True)
    assert from_file["tokens"] == imported["tokens"] == 12
    assert from_file["nll_sum"] == imported["nll_sum"]


def test_authors_model_pt_scores_as_the_imported_model(txlc, tmp_path):
    run_txlc("import", str(CHECKPOINTS / "authors_model" / "model.pt"), "-o", str(tmp_path / "imported"))
    ids = [1, 5, 9, 2, 7, 3, 8, 4, 6, 1, 0, 2]
    from_file = txlc.load(CHECKPOINTS / "authors_model" / "model.pt").score(ids)
    imported = txlc.load(tmp_path / "imported").score(ids)
    assert from_file["nll_sum"] == imported["nll_sum"]


def test_safetensors_with_config_beside_it(txlc):
    text = (MODELS / "kjv-char" / "valid.txt").read_text()[:2000]
    a = txlc.load(MODELS / "kjv-char" / "model.safetensors").score(text, text=True)
    b = txlc.load(MODELS / "kjv-char").score(text, text=True)
    assert a["nll_sum"] == b["nll_sum"]


def test_other_files_are_named(txlc, tmp_path):
    expect("model-vocab-pickle", lambda: txlc.load(CHECKPOINTS / "hf_tiny" / "vocab.pkl"))
    expect("model-vocab-pickle", lambda: txlc.load(CHECKPOINTS / "hf_tiny_legacy" / "vocab.pkl"))
    (tmp_path / "int.pkl").write_bytes(b"\x80\x04K\x01.")
    expect("model-pickle", lambda: txlc.load(tmp_path / "int.pkl"))
    expect("model-vocab-text", lambda: txlc.load(MODELS / "kjv-words" / "vocab.txt"))
    expect("model-vocab-json", lambda: txlc.load(MODELS / "kjv-char" / "vocab.json"))
    expect("model-text", lambda: txlc.load(MODELS / "kjv-char" / "valid.txt"))
    expect("model-state-dict", lambda: txlc.load(CHECKPOINTS / "authors_model" / "state_dict.pt"))
    expect("model-safetensors-alone", lambda: txlc.load(CHECKPOINTS / "expected" / "hf_tiny.model.safetensors"))
    expect(
        "model-checkpoint-weights",
        lambda: txlc.load(CHECKPOINTS / "hf_tiny" / "pytorch_model.bin", weights=MODELS / "kjv-char" / "model.safetensors"),
    )
    artifact = tmp_path / "good.txla"
    run_txlc("compile", str(MODELS / "kjv-char"), "-o", str(artifact))
    expect(
        "weights-artifact", lambda: txlc.load(MODELS / "kjv-char" / "config.json", weights=artifact)
    )
    m = txlc.load(MODELS / "kjv-char")
    expect("text-artifact", lambda: m.score(artifact))


def test_the_command_line_says_the_same(tmp_path):
    artifact = tmp_path / "good.txla"
    run_txlc("compile", str(MODELS / "kjv-char"), "-o", str(artifact))
    rows = {
        "spec-artifact": ["import", str(CHECKPOINTS / "hf_tiny"), "-o", str(tmp_path / "x"), "--spec", str(artifact)],
        "import-text": ["import", str(MODELS / "kjv-char" / "valid.txt"), "-o", str(tmp_path / "x")],
        "model-text": ["score", str(MODELS / "kjv-char" / "valid.txt"), str(MODELS / "kjv-char")],
        "text-artifact": ["score", str(MODELS / "kjv-char"), str(artifact)],
    }
    for row, args in rows.items():
        p = run_txlc(*args, check=False)
        assert p.returncode == 3
        line = p.stderr.strip()
        assert line.startswith("txlc: error: ")
        assert re.match(message_pattern(TABLE[row]), line[len("txlc: error: ") :]), f"{row}: {line!r}"
