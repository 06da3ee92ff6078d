# tests/python/test_conformance.py - every conformance case through Session.forward, with the C++
# runner's comparison (driver/conformance.cpp): every element within atol + rtol * |want| and
# rel_l2 = |got - want|_2 / |want|_2 within rel_l2, for hidden, nll, logprob (where the case has
# it) and, in the hidden memory form, the memory of every slot after every segment.
import json

import numpy as np
import pytest

from conftest import SOURCE, TESTS, read_safetensors, spec_file

CASES = sorted(p.parent for p in (TESTS / "conformance").glob("*/case.json")) + sorted(
    p.parent for p in (TESTS / "conformance-hf").glob("*/case.json")
)


def check(name, got, want, tol):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
    diff = np.abs(got - want)
    diff[np.isnan(diff)] = np.inf
    violation = (diff / (tol["atol"] + tol["rtol"] * np.abs(want))).max(initial=0.0)
    norm = np.sqrt((want * want).sum())
    rel_l2 = np.sqrt((diff * diff).sum()) / norm if norm > 0 else np.sqrt((diff * diff).sum())
    assert violation <= 1.0, f"{name}: max |got - want| {diff.max():.3g} is {violation:.2f} of the bound"
    assert rel_l2 <= tol["rel_l2"], f"{name}: rel_l2 {rel_l2:.3g} above {tol['rel_l2']}"


def open_case(txlc, case, **setting):
    c = json.loads((case / "case.json").read_text())
    if c["format"] == "txl-conformance-hf/1":
        model = txlc.load(case, weights=case / c["weights"], initial_memory=c["initial_memory"], **setting)
        assert model.semantics == "huggingface"
    else:
        model = txlc.load(spec_file(case.name), weights=case / c.get("weights", "weights.safetensors"), **setting)
        assert model.semantics == "authors"
    return c, model


@pytest.mark.parametrize("memory", ["kv", "hidden"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_case(txlc, case, memory):
    c, model = open_case(txlc, case, memory=memory)
    io, _ = read_safetensors(case / c.get("io", "io.safetensors"))
    session = model.session(batch=c["batch"])
    tol = c["tolerance"]
    compared = 0
    for k, seg in enumerate(c["segments"]):
        assert session.mlen == seg["mlen"], f"seg{k}: the session holds {session.mlen} positions"
        want_logprob = f"seg{k}.logprob" in io
        out = session.forward(io[f"seg{k}.input"], io[f"seg{k}.target"], logprob=want_logprob)
        check(f"seg{k}.hidden", out.hidden, io[f"seg{k}.hidden"], tol)
        check(f"seg{k}.nll", out.nll, io[f"seg{k}.nll"], tol)
        compared += 2
        if want_logprob:
            check(f"seg{k}.logprob", out.logprob, io[f"seg{k}.logprob"], tol)
            compared += 1
        else:
            assert out.logprob is None
        if memory == "hidden":
            state = session.state()
            for layer in range(model.n_layer + 1):
                name = f"seg{k}.mem{layer}"
                if name in io:
                    check(name, state[f"mem.{layer}"], io[name], tol)
                    compared += 1
    assert compared >= 2 * len(c["segments"])


def test_every_shared_case_is_here():
    # tests/conformance* are the project's copies of ../shared/conformance*: none left out.
    assert len([c for c in CASES if c.parent.name == "conformance"]) >= 10
    assert len([c for c in CASES if c.parent.name == "conformance-hf"]) >= 5
    shared = SOURCE.parent / "shared"
    for kind in ["conformance", "conformance-hf"]:
        if (shared / kind).is_dir():
            names = {p.parent.name for p in (shared / kind).glob("*/case.json")}
            assert names <= {c.name for c in CASES if c.parent.name == kind}, kind
