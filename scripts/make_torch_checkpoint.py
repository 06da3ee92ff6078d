#!/usr/bin/env python3
# scripts/make_torch_checkpoint.py - writes a Hugging Face Transformer-XL pytorch_model.bin without torch.
#
# A model folder (config.json + pytorch_model.bin) whose checkpoint is laid
# out as torch.save writes a state dict in its zip format
# (tests/data/checkpoints/README.md): stored entries, each storage's data on a
# 64-byte boundary, a protocol-2 data.pkl of an OrderedDict of
# torch._utils._rebuild_tensor_v2 calls, tied weights as two names for one
# storage key. Values are a fixed finite pattern, not a trained model; the
# point is the size and the layout, for memory measurements of loading.
#
#   scripts/make_torch_checkpoint.py --preset wt103-base /tmp/wt103_base   # 151M parameters, ~606 MB
#   scripts/make_torch_checkpoint.py --preset tiny --dtype f16 /tmp/tiny
#   /usr/bin/time -v build/tools/txlc info /tmp/wt103_base
import argparse
import array
import json
import os
import struct
import sys
import zipfile

# Hugging Face configs (transfo-xl-wt103 is the large model; base is the paper's 16-layer WT103 model).
PRESETS = {
    "wt103-base": dict(vocab_size=267735, cutoffs=[20000, 40000, 200000], d_model=410, d_embed=410, n_head=10,
                       d_head=41, d_inner=2100, div_val=1, n_layer=16, mem_len=150, tie_projs=[False, True, True, True]),
    "medium": dict(vocab_size=32000, cutoffs=[8000, 16000], d_model=512, d_embed=512, n_head=8, d_head=64,
                   d_inner=2048, div_val=1, n_layer=8, mem_len=64, tie_projs=[False, True, True]),
    "tiny": dict(vocab_size=96, cutoffs=[], d_model=32, d_embed=32, n_head=2, d_head=16, d_inner=64, div_val=1,
                 n_layer=2, mem_len=6, tie_projs=[False]),
}


def config_for(p):
    c = {"architectures": ["TransfoXLLMHeadModel"], "model_type": "transfo-xl", "pre_lnorm": False,
         "clamp_len": -1, "same_length": True, "attn_type": 0, "sample_softmax": -1, "adaptive": True,
         "dropout": 0.1, "dropatt": 0.0, "untie_r": True, "layer_norm_epsilon": 1e-05, "eos_token_id": 0,
         "tie_word_embeddings": True, "torch_dtype": "float32"}
    c.update(p)
    return c


def state_dict(c):
    """(name, shape, tied_to or None) in the order of TransfoXLLMHeadModel.state_dict()."""
    d, hd, n = c["d_model"], c["n_head"] * c["d_head"], c["vocab_size"]
    assert c["div_val"] == 1 and c["d_embed"] == d, "presets use div_val 1 and d_embed == d_model"
    bounds = [0] + c["cutoffs"] + [n]
    out = [("transformer.word_emb.emb_layers.0.weight", [n, d], None)]
    for l in range(c["n_layer"]):
        p = f"transformer.layers.{l}."
        out += [(p + "dec_attn.r_r_bias", [c["n_head"], c["d_head"]], None),
                (p + "dec_attn.r_w_bias", [c["n_head"], c["d_head"]], None),
                (p + "dec_attn.qkv_net.weight", [3 * hd, d], None),
                (p + "dec_attn.o_net.weight", [d, hd], None),
                (p + "dec_attn.layer_norm.weight", [d], None),
                (p + "dec_attn.layer_norm.bias", [d], None),
                (p + "dec_attn.r_net.weight", [hd, d], None),
                (p + "pos_ff.CoreNet.0.weight", [c["d_inner"], d], None),
                (p + "pos_ff.CoreNet.0.bias", [c["d_inner"]], None),
                (p + "pos_ff.CoreNet.3.weight", [d, c["d_inner"]], None),
                (p + "pos_ff.CoreNet.3.bias", [d], None),
                (p + "pos_ff.layer_norm.weight", [d], None),
                (p + "pos_ff.layer_norm.bias", [d], None)]
    out.append(("transformer.pos_emb.inv_freq", [d // 2], None))
    clusters = len(bounds) - 1
    if clusters > 1:
        out += [("crit.cluster_weight", [clusters - 1, d], None), ("crit.cluster_bias", [clusters - 1], None)]
    out += [("crit.out_layers.0.weight", [n, d], "transformer.word_emb.emb_layers.0.weight"),
            ("crit.out_layers.0.bias", [n], None)]
    return out


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ---------------------------------------------------------------- pickle (protocol 2, by hand)

def uni(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def integer(v):
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -(1 << 31) <= v < (1 << 31):
        return b"J" + struct.pack("<i", v)
    b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(b)]) + b


def int_tuple(vs):
    return b"(" + b"".join(integer(v) for v in vs) + b"t"


def data_pkl(entries, storage_class):
    """entries: (name, shape, key, storage numel)."""
    ordered_dict = b"ccollections\nOrderedDict\n)R"
    body = b"\x80\x02" + ordered_dict + b"("
    for name, shape, key, count in entries:
        strides = [numel(shape[i + 1:]) for i in range(len(shape))]
        pid = b"(" + uni("storage") + b"ctorch\n" + storage_class + b"\n" + uni(key) + uni("cpu") + integer(count) + b"tQ"
        body += uni(name) + b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + integer(0) + int_tuple(shape) + \
            int_tuple(strides) + b"\x89" + ordered_dict + b"tR"
    return body + b"u."


# ---------------------------------------------------------------- values

def pattern(dtype):
    """One period of finite values in [-0.05, 0.05], as bytes."""
    period = 4093  # prime: rows of any width see shifted values
    vals = [((i * 7919) % period) / period * 0.1 - 0.05 for i in range(period)]
    if dtype == "f32":
        return array.array("f", vals).tobytes()
    return b"".join(struct.pack("<e", v) for v in vals)


def write_storage(zf, arcname, dtype, count):
    block = pattern(dtype)
    size = count * (4 if dtype == "f32" else 2)
    info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    # torch pads each entry's data to 64 bytes with an "FB" extra field.
    header = 30 + len(arcname.encode())
    pad = (-(zf.fp.tell() + header + 4)) % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"\0" * pad
    with zf.open(info, "w", force_zip64=size >= (1 << 31) - (1 << 20)) as f:
        written = 0
        while written < size:
            chunk = block * max(1, (1 << 22) // len(block))
            chunk = chunk[:size - written]
            f.write(chunk)
            written += len(chunk)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("out", help="the model folder to write (config.json, pytorch_model.bin)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="wt103-base")
    ap.add_argument("--dtype", choices=["f32", "f16"], default="f32")
    a = ap.parse_args()
    c = config_for(PRESETS[a.preset])
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    storage_class = b"FloatStorage" if a.dtype == "f32" else b"HalfStorage"
    keys, entries = {}, []
    for name, shape, tied in state_dict(c):
        key = keys[tied] if tied else str(len(keys))
        keys[name] = key
        entries.append((name, shape, key, numel(shape)))
    top = "pytorch_model"
    path = os.path.join(a.out, "pytorch_model.bin")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(zipfile.ZipInfo(top + "/data.pkl", date_time=(1980, 1, 1, 0, 0, 0)),
                    data_pkl(entries, storage_class))
        written = set()
        for name, shape, key, count in entries:
            if key in written:
                continue
            written.add(key)
            write_storage(zf, f"{top}/data/{key}", a.dtype, count)
        zf.writestr(zipfile.ZipInfo(top + "/version", date_time=(1980, 1, 1, 0, 0, 0)), b"3\n")
    stored = {k: n for _, _, k, n in entries}
    print(f"{path}: {os.path.getsize(path)} bytes, {sum(stored.values())} elements ({a.dtype})", file=sys.stderr)


if __name__ == "__main__":
    main()
