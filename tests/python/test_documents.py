# tests/python/test_documents.py - Model.score_documents against `txlc score --documents` on one corpus:
# the same line per document (numbers bit for bit: they print with 17 digits) and the same summary.
import json

import pytest

from conftest import MODELS, run_txlc

# The summary's fields that measure this run's speed, not the corpus.
TIMINGS = {"seconds", "documents_per_second", "tokens_per_second"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A JSON Lines corpus from kjv-char's validation text, with documents that cannot be scored among them."""
    lines = [l for l in (MODELS / "kjv-char" / "valid.txt").read_text().splitlines() if l.strip()][:12]
    docs = [{"id": f"v{i}", "text": line} for i, line in enumerate(lines)]
    docs.insert(3, {"id": "empty", "text": ""})
    docs.insert(7, {"id": 7, "text": "\u00e6\u00f8 outside the vocabulary"})
    docs.append({"text": "an id from the line number"})
    path = tmp_path_factory.mktemp("documents") / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path, docs


def command_line(path, tmp_path, *flags):
    summary = tmp_path / "summary.json"
    r = run_txlc("score", MODELS / "kjv-char", "--documents", path, "--summary", summary, "--threads", "1", *flags)
    return [json.loads(l) for l in r.stdout.splitlines()], json.loads(summary.read_text())


def same_summary(a, b):
    assert {k: v for k, v in a.items() if k not in TIMINGS} == {k: v for k, v in b.items() if k not in TIMINGS}


@pytest.mark.parametrize("batch", [1, 3])
def test_score_documents_equals_the_command_line(txlc, kjv_char, corpus, tmp_path, batch):
    path, docs = corpus
    lines, summary = command_line(path, tmp_path, "--batch", batch)
    r = kjv_char.score_documents(path, threads=1, batch=batch)
    assert r["documents"] == lines
    same_summary(r["summary"], summary)
    assert summary["documents"] == len(docs) and summary["failed"] == 2 and summary["scored"] == len(docs) - 2
    assert [d.get("error") is not None for d in r["documents"]].count(True) == 2


def test_score_documents_from_dicts_and_strings(txlc, kjv_char, corpus, tmp_path):
    path, docs = corpus
    lines, summary = command_line(path, tmp_path)
    from_dicts = kjv_char.score_documents(iter(docs), threads=1)
    assert from_dicts["documents"] == lines
    assert {k: v for k, v in from_dicts["summary"].items() if k not in TIMINGS | {"file"}} == {
        k: v for k, v in summary.items() if k not in TIMINGS | {"file"}
    }
    # Strings are documents of a plain-text corpus: ids are their 1-based line numbers.
    texts = [d["text"] for d in docs if d["text"]]
    from_strings = kjv_char.score_documents(texts, threads=1)["documents"]
    scored = [l for l in lines if "error" not in l or l["id"] == 7]
    assert [{k: v for k, v in d.items() if k != "id"} for d in from_strings] == [
        {k: v for k, v in l.items() if k != "id"} for l in scored
    ]
    assert [d["id"] for d in from_strings] == list(range(1, len(texts) + 1))


def test_score_documents_strict_refuses_what_it_cannot_score(txlc, kjv_char, corpus):
    path, _ = corpus
    with pytest.raises(txlc.InputError, match=r"document \"empty\" \(line 4\): .*\(--strict\)"):
        kjv_char.score_documents(path, strict=True, threads=1)


def test_score_documents_refuses_mixed_and_odd_items(txlc, kjv_char):
    with pytest.raises(TypeError, match="all dicts or all strings"):
        kjv_char.score_documents([{"text": "In the beginning"}, "God created"])
    with pytest.raises(TypeError, match="dict or a str"):
        kjv_char.score_documents([3])
    with pytest.raises(ValueError, match="line break"):
        kjv_char.score_documents(["two\nlines"])
