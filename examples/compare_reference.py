#!/usr/bin/env python3
# examples/compare_reference.py - txlc from Python next to the authors' PyTorch code.
#
# 1. Loads the bundled character model and scores its validation text (the README's figure).
# 2. Runs a conformance case (tests/conformance/tiny_base: random weights, what the authors'
#    pytorch/mem_transformer.py computed in float64, segment by segment) through Session.forward
#    and prints the largest difference of the hidden states and log-probabilities.
# 3. When torch is importable and --authors-code names a checkout of the authors' code
#    (kimiyoung/transformer-xl's pytorch/ folder, whose mem_transformer.py it imports), runs their
#    MemTransformerLM on the same weights and segments live and prints the largest difference to
#    Session.forward; otherwise says why it skipped that part.
#
#   PYTHONPATH=build/python /usr/bin/python3 examples/compare_reference.py [--authors-code DIR]
import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np

import txlc

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "tests" / "conformance" / "tiny_base"


def read_safetensors(path):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    types = {"F32": np.float32, "I64": np.int64}
    return {name: np.frombuffer(data[8 + n + t["data_offsets"][0] : 8 + n + t["data_offsets"][1]],
                                dtype=types[t["dtype"]]).reshape(t["shape"]) for name, t in header.items()}


def case_model(tmp):
    case = json.loads((CASE / "case.json").read_text())
    spec = Path(tmp) / "tiny_base.json"
    spec.write_text(json.dumps(case["config"]))
    return case, txlc.load(spec, weights=CASE / "weights.safetensors")


def against_conformance_data(case, model):
    io = read_safetensors(CASE / "io.safetensors")
    s = model.session(batch=case["batch"])
    worst = {"hidden": 0.0, "logprob": 0.0}
    for k in range(len(case["segments"])):
        out = s.forward(io[f"seg{k}.input"])
        worst["hidden"] = max(worst["hidden"], float(np.abs(out.hidden - io[f"seg{k}.hidden"]).max()))
        worst["logprob"] = max(worst["logprob"], float(np.abs(out.logprob - io[f"seg{k}.logprob"]).max()))
    return worst


def against_pytorch(case, model, authors_code):
    import torch

    sys.path.insert(0, str(authors_code))
    from mem_transformer import MemTransformerLM  # the authors' code

    c = case["config"]
    ref = MemTransformerLM(c["n_token"], c["n_layer"], c["n_head"], c["d_model"], c["d_head"], c["d_inner"],
                           0.0, 0.0, tie_weight=c["tie_weight"], d_embed=c["d_embed"], div_val=c["div_val"],
                           tie_projs=c["tie_projs"], pre_lnorm=c["pre_lnorm"], tgt_len=c["tgt_len"],
                           ext_len=c["ext_len"], mem_len=c["mem_len"], cutoffs=c["cutoffs"],
                           same_length=c["same_length"], attn_type=c["attn_type"], clamp_len=c["clamp_len"])
    weights = {k: torch.from_numpy(v.copy()) for k, v in read_safetensors(CASE / "weights.safetensors").items()}
    ref.load_state_dict(weights, strict=False)  # tied tensors are stored once; the model ties them
    ref = ref.double().eval()
    io = read_safetensors(CASE / "io.safetensors")
    s = model.session(batch=case["batch"])
    mems = ref.init_mems()
    worst = {"hidden": 0.0, "logprob": 0.0}
    with torch.no_grad():
        for k in range(len(case["segments"])):
            tokens = io[f"seg{k}.input"]
            hidden, mems = ref._forward(torch.from_numpy(tokens.copy()), mems=mems)
            out = s.forward(tokens)
            worst["hidden"] = max(worst["hidden"], float(np.abs(out.hidden - hidden.numpy()).max()))
            if not c["cutoffs"]:
                logits = torch.nn.functional.linear(hidden, ref.crit.out_layers[0].weight, ref.crit.out_layers[0].bias)
                lp = torch.log_softmax(logits, dim=-1).numpy()
                worst["logprob"] = max(worst["logprob"], float(np.abs(out.logprob - lp).max()))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--authors-code", help="the pytorch/ folder of a kimiyoung/transformer-xl checkout")
    a = ap.parse_args()

    kjv = txlc.load(ROOT / "models" / "kjv-char")
    r = kjv.score(ROOT / "models" / "kjv-char" / "valid.txt")
    print(f"kjv-char: {r['bits_per_char']:.6f} bits per character over {r['tokens']} characters "
          f"(the model's README: 2.117692)")

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        case, model = case_model(tmp)
        w = against_conformance_data(case, model)
        print(f"tiny_base vs the authors' PyTorch code (its recorded float64 outputs): largest difference "
              f"hidden {w['hidden']:.3g}, log-probabilities {w['logprob']:.3g} (tolerance "
              f"{case['tolerance']['atol']} + {case['tolerance']['rtol']} x |value|)")
        try:
            import torch  # noqa: F401
        except ImportError:
            print("PyTorch comparison skipped: torch is not importable (on Debian: apt-get install python3-torch)")
            return
        if not a.authors_code:
            print("PyTorch comparison skipped: pass --authors-code DIR, the pytorch/ folder of the authors' "
                  "kimiyoung/transformer-xl code (its mem_transformer.py)")
            return
        w = against_pytorch(case, model, a.authors_code)
        print(f"tiny_base vs the authors' MemTransformerLM run now (float64): largest difference hidden "
              f"{w['hidden']:.3g}, log-probabilities {w['logprob']:.3g}")


if __name__ == "__main__":
    main()
