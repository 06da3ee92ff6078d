# tests/python/test_generate.py - Model.generate with a seed gives what `txlc generate` gives with it.
from conftest import MODELS, txlc_json

PROMPT = "Joh3:16 For God so loved"


def test_seeded_sampling_equals_txlc_generate(kjv_char):
    cli = txlc_json("generate", MODELS / "kjv-char", "--prompt", PROMPT, "-n", 80, "--temperature", 0.8,
                    "--top-k", 20, "--seed", 7)
    g = kjv_char.generate(PROMPT, 80, temperature=0.8, top_k=20, seed=7)
    assert g.prompt_tokens == len(PROMPT)
    pieces = list(g)
    assert len(pieces) == 80 and g.remaining == 0
    assert g.token_ids == cli["token_ids"]
    assert "".join(pieces) == cli["text"] == g.text
    assert kjv_char.generate(PROMPT, 80, temperature=0.8, top_k=20, seed=7, stream=False) == cli["text"]


def test_word_model_top_p_and_greedy_equal_txlc_generate(txlc):
    m = txlc.load(MODELS / "kjv-words")
    prompt = "In the beginning God created"
    cli = txlc_json("generate", MODELS / "kjv-words", "--prompt", prompt, "-n", 30, "--top-p", 0.9, "--seed", 3)
    g = m.generate(prompt, 30, top_p=0.9, seed=3)
    pieces = list(g)
    assert len(pieces) == 30
    assert g.token_ids == cli["token_ids"]
    assert g.text == cli["text"]
    greedy = txlc_json("generate", MODELS / "kjv-words", "--prompt", prompt, "-n", 20, "--greedy")
    assert m.generate(prompt, 20, greedy=True, stream=False) == greedy["text"]
    # temperature 0 is greedy decoding, as in the command line (--temp 0) and other tools.
    assert m.generate(prompt, 20, temperature=0, stream=False) == greedy["text"]
    assert txlc_json("generate", MODELS / "kjv-words", "--prompt", prompt, "-n", 20, "--temp", 0)["text"] == greedy["text"]


def test_a_generation_keeps_its_model_alive(txlc):
    m = txlc.load(MODELS / "kjv-char")
    g = m.generate(PROMPT, 10, seed=1)
    del m
    assert len("".join(g)) == 10
