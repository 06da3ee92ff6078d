#!/usr/bin/env python3
"""Regenerates the seed corpora in fuzz/corpus/<target>/ (small valid and
invalid inputs) from tests/conformance and models/. Run from the repository
root:  python3 fuzz/make_corpus.py [--txlc build/tools/txlc]
With --txlc, it also writes IR text, graph JSON and artifact seeds, produced
by that binary (`conformance --print-after-all`, `compile`), and the artifact
regressions in fuzz/regressions/artifact/ that are made from a fresh artifact
(so they stay in the current format version)."""
import argparse, glob, json, os, struct, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
REGRESSIONS = os.path.join(ROOT, "fuzz", "regressions")


M64 = (1 << 64) - 1
P1, P2, P3 = 0x9e3779b185ebca87, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9


def content_hash(data):
    """driver/content_hash.cpp's ContentHash (docs/ARTIFACT.md)."""
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & M64
    lanes = [(P1 + P2) & M64, P2, 0, (-P1) & M64]
    full = len(data) // 32 * 32
    for off in range(0, full, 32):
        for i in range(4):
            w = struct.unpack_from("<Q", data, off + 8 * i)[0]
            lanes[i] = rotl((lanes[i] + w * P2) & M64, 31) * P1 & M64
    h = (rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18)) & M64
    h ^= len(data) * P3 & M64
    for b in data[full:]:
        h = rotl(h ^ (b * P3 & M64), 11) * P1 & M64
    h ^= h >> 33
    h = h * P2 & M64
    h ^= h >> 29
    h = h * P3 & M64
    h ^= h >> 32
    return h


def with_manifest(art, edit):
    """The artifact with its manifest JSON changed by edit(manifest); the data
    section moves to the next multiple of 64 after it when it no longer fits
    (offsets are relative to the data section), the header's lengths and the
    checksum are recomputed."""
    moff, mlen, doff, dlen = struct.unpack_from("<QQQQ", art, 16)
    manifest = json.loads(art[moff:moff + mlen])
    edit(manifest)
    text = json.dumps(manifest, separators=(",", ":")).encode()
    new_doff = max(doff, (moff + len(text) + 63) // 64 * 64)
    body = bytearray(art[:moff]) + text + bytes(new_doff - moff - len(text)) + art[doff:doff + dlen]
    struct.pack_into("<QQQQ", body, 24, len(text), new_doff, dlen, len(body) + 8)
    return bytes(body) + struct.pack("<Q", content_hash(bytes(body)))


def put(target, name, data, root=OUT):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def spec_seeds():
    configs = []
    for case in sorted(glob.glob(os.path.join(ROOT, "tests/conformance/*/case.json"))):
        cfg = json.load(open(case))["config"]
        name = os.path.basename(os.path.dirname(case))
        put("spec_parser", f"valid_{name}.json", json.dumps(cfg, indent=1))
        configs.append(cfg)
    for m in sorted(glob.glob(os.path.join(ROOT, "models/*/config.json"))):
        put("spec_parser", "valid_model_" + os.path.basename(os.path.dirname(m)) + ".json", open(m).read())
    base = configs[0]
    hf = {"model_type": "transfo-xl", "vocab_size": 267735, "cutoffs": [20000, 40000, 200000], "d_model": 1024,
          "d_embed": 1024, "n_head": 16, "d_head": 64, "d_inner": 4096, "div_val": 4, "n_layer": 18,
          "mem_len": 1600, "clamp_len": 1000, "same_length": True, "proj_share_all_but_first": True,
          "attn_type": 0, "sample_softmax": -1, "adaptive": True, "dropout": 0.1, "dropatt": 0.0,
          "untie_r": True, "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True}
    put("spec_parser", "valid_huggingface.json", json.dumps(hf))
    def variant(name, **changes):
        c = dict(base)
        for k, v in changes.items():
            if v is None:
                c.pop(k, None)
            else:
                c[k] = v
        put("spec_parser", name + ".json", json.dumps(c))
    variant("bad_missing_key", n_layer=None)
    variant("bad_wrong_type", d_head="8")
    variant("bad_zero", d_head=0)
    variant("bad_negative", n_head=-2)
    variant("bad_huge", n_token=1 << 40)
    variant("bad_overflow", n_head=2147483647, d_head=2147483647, d_model=2147483646)
    variant("bad_div_val_0", div_val=0)
    variant("bad_cutoffs", cutoffs=[50, 20], tie_projs=[False, False, False])
    variant("bad_cutoff_past_ntoken", cutoffs=[97], tie_projs=[False, False])
    variant("bad_odd_d_model", d_model=15)
    variant("bad_float", d_inner=2.5)
    put("spec_parser", "bad_syntax.json", '{"n_token": 97,, }')
    put("spec_parser", "bad_duplicate.json", '{"n_token": 97, "n_token": 98}')
    put("spec_parser", "bad_array.json", "[1, 2, 3]")
    put("spec_parser", "bad_deep.json", "[" * 100 + "]" * 100)
    put("spec_parser", "bad_empty.json", "")


def safetensors_image(tensors, metadata=None, header_override=None):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = header_override if header_override is not None else json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    f32 = lambda *v: struct.pack(f"<{len(v)}f", *v)
    put("safetensors", "valid_dtypes.safetensors", safetensors_image([
        ("f32", "F32", [2, 2], f32(1, 2, 3, 4)),
        ("f16", "F16", [2], struct.pack("<2e", 0.5, -2.0)),
        ("bf16", "BF16", [2], b"\x80\x3f\x00\xc0"),
        ("f64", "F64", [1], struct.pack("<d", 3.25)),
        ("i64", "I64", [2], struct.pack("<2q", 5, -1)),
        ("i32", "I32", [1], struct.pack("<i", 7)),
        ("u8", "U8", [3], b"\x01\x02\x03"),
        ("bool", "BOOL", [1], b"\x01"),
        ("scalar", "F32", [], f32(9)),
        ("empty", "F32", [0, 4], b""),
    ], metadata={"format": "pt"}))
    put("safetensors", "bad_nan.safetensors", safetensors_image([("w", "F32", [2], f32(1, float("nan")))]))
    put("safetensors", "bad_inf_f64.safetensors", safetensors_image([("w", "F64", [1], struct.pack("<d", 1e300))]))
    put("safetensors", "bad_short.safetensors", b"\x10\x00")
    put("safetensors", "bad_header_past_end.safetensors", struct.pack("<Q", 1000) + b"{}")
    put("safetensors", "bad_not_json.safetensors", safetensors_image([], header_override=b"{\"a\": ]"))
    put("safetensors", "bad_not_object.safetensors", safetensors_image([], header_override=b"[1,2]"))
    put("safetensors", "bad_duplicate.safetensors",
        safetensors_image([], header_override=b'{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},'
                                              b'"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}') + b"\0" * 4)
    put("safetensors", "bad_dtype.safetensors", safetensors_image([("x", "F33", [1], f32(1))]))
    put("safetensors", "bad_shape_size.safetensors",
        safetensors_image([], header_override=b'{"x":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}}') + b"\0" * 12)
    put("safetensors", "bad_offsets_past_end.safetensors",
        safetensors_image([], header_override=b'{"x":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}') + b"\0" * 10)
    put("safetensors", "bad_overlap.safetensors",
        safetensors_image([], header_override=b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},'
                                              b'"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}}') + b"\0" * 24)
    put("safetensors", "bad_overflow.safetensors",
        safetensors_image([], header_override=b'{"x":{"dtype":"F64","shape":[4294967296,4294967296],'
                                              b'"data_offsets":[0,0]}}'))
    # A real model's header, with the data cut short, and a small real file.
    real = open(os.path.join(ROOT, "tests/conformance/nomem/weights.safetensors"), "rb").read()
    n = struct.unpack("<Q", real[:8])[0]
    put("safetensors", "bad_truncated_real.safetensors", real[: 8 + n + 64])
    put("safetensors", "valid_real_nomem.safetensors", real)


def tool_seeds(txlc):
    # IR text: the graph after every pass of a few small cases.
    for case in ["nomem", "tiny_base", "absolute", "adaptive_div1"]:
        r = subprocess.run([txlc, "conformance", os.path.join(ROOT, "tests/conformance", case), "--backend",
                            "reference", "--print-after-all"], capture_output=True, text=True)
        chunks, cur = [], []
        for line in r.stderr.splitlines():
            if line.startswith("//") and cur:
                chunks.append("\n".join(cur) + "\n")
                cur = []
            cur.append(line)
        if cur:
            chunks.append("\n".join(cur) + "\n")
        chunks = [c for c in chunks if " = " in c]
        for i, c in enumerate(chunks[:2] + chunks[-1:]):
            put("ir_parser", f"valid_{case}_{i}.txlir", c)
    # Artifacts and the graph JSON they hold.
    with tempfile.TemporaryDirectory() as tmp:
        for case in ["nomem", "tiny_base"]:
            d = os.path.join(ROOT, "tests/conformance", case)
            spec = os.path.join(tmp, case + ".json")
            json.dump(json.load(open(os.path.join(d, "case.json")))["config"], open(spec, "w"))
            out = os.path.join(tmp, case + ".txla")
            subprocess.run([txlc, "compile", spec, "--weights", os.path.join(d, "weights.safetensors"), "-o", out,
                            "--qlen", "3", "--passes", "none"], check=True, capture_output=True)
            art = open(out, "rb").read()
            put("artifact", f"valid_{case}.txla", art)
            put("artifact_exec", f"valid_{case}.txla", art)  # loaded, planned and run one segment
            moff, mlen = struct.unpack("<QQ", art[16:32])
            manifest = json.loads(art[moff:moff + mlen])
            for i, g in enumerate(manifest["graphs"][:2]):
                put("graph_json", f"valid_{case}_{i}.json", json.dumps(g["graph"]))
        put("artifact", "bad_truncated.txla", art[: len(art) // 2])
        bad = bytearray(art)
        bad[len(bad) // 2] ^= 0xff
        put("artifact", "bad_checksum.txla", bytes(bad))
        put("artifact", "bad_version.txla", art[:8] + struct.pack("<I", 99) + art[12:])
        put("artifact", "bad_magic.txla", b"NOTATXLA" + art[8:64])
        # A shape whose element count wraps 64 bits ([2^40]^3 = 2^120) with
        # "bytes": 0, and a valid checksum: the reader must reject the count.
        def overflow(manifest):
            w = next(w for w in manifest["weights"] if "alias_of" not in w)
            w["shape"], w["bytes"] = [1 << 40] * 3, 0
        put("artifact", "shape_product_overflow.txla", with_manifest(art, overflow), REGRESSIONS)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--txlc")
    a = ap.parse_args()
    spec_seeds()
    safetensors_seeds()
    put("graph_json", "bad_empty_object.json", "{}")
    put("graph_json", "bad_unknown_op.json",
        '{"format":"txlc-graph/1","name":"g","nodes":[{"id":0,"op":"frobnicate","operands":[],"attrs":{}}]}')
    put("ir_parser", "bad_syntax.txlir", "%0 = input() {name = \"x\"} : f32[4,\n")
    if a.txlc:
        tool_seeds(a.txlc)
