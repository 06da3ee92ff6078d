#!/usr/bin/env python3
# bench/reference_bench.py - the authors' PyTorch Transformer-XL (Dai et al., MemTransformerLM in
# pytorch/mem_transformer.py of https://github.com/kimiyoung/transformer-xl) timed as
# `txlc bench SPEC --random-weights --prefill --repetitions 1` times txlc: the reference figure of
# scripts/bench.sh --reference (docs/PERFORMANCE.md, "Reproduce").
#
#   /usr/bin/python3 bench/reference_bench.py --authors-code DIR SPEC [--qlen Q] [--mem-len M]
#       [--batch B] [--segments N] [--warmup W] [--nll] [--threads T] [--seed S] [--check]
#
# DIR is the directory holding the authors' mem_transformer.py (their repository's pytorch/), read
# where the user put it and never copied into txlc. SPEC is the model spec `txlc bench` reads
# (bench/*.json, the authors' keys: docs/MODEL_SPEC.md); its fields go to MemTransformerLM's
# constructor as they are named, d_embed -1 or null meaning d_model, with dropout and dropatt 0,
# sample_softmax -1, tgt_len and mem_len replaced by --qlen and --mem-len when given.
#
# What is timed, on each side:
#   - Weights: seeded random (torch.manual_seed), the model in eval() under torch.no_grad(). The
#     authors' constructor leaves some parameters uninitialised (torch.Tensor(...)); every
#     parameter is set here: matrices and the r_w_bias / r_r_bias vectors N(0, 0.02), layer-norm
#     scales 1, other vectors 0 (finite values, no denormals; speed does not depend on them).
#   - Prefill (txlc: one untimed segment of mem_len tokens in a separate session, whose state the
#     timed session loads): one untimed _forward() of mem_len random tokens from empty mems, so the
#     memory holds mem_len positions of every layer, as in the steady state.
#   - Warm-up: W untimed segments (txlc bench's default, 2).
#   - Timed: N segments of Q random tokens per stream, each call timed on its own (perf_counter
#     around the call; the tokens and targets are drawn before it), the memory carried from one
#     segment to the next and truncated to mem_len by the authors' _update_mems.
#       without --nll: txlc's Session::forward without targets and without log-probabilities runs
#         the layers only (the hidden states of the segment and the new memory; no output layer).
#         The reference calls MemTransformerLM._forward(data, mems), the same body: embedding,
#         every layer over [memory; segment], the new mems; the adaptive softmax is not run.
#       with --nll: txlc computes the NLL of random targets through the adaptive softmax; the
#         reference calls MemTransformerLM.forward(data, target, *mems), whose ProjectedAdaptive-
#         LogSoftmax computes the head over every position and each tail cluster over the positions
#         whose target falls in it (txlc's gathered tail clusters do the same work).
#   - Figures: tokens_per_s = batch * qlen * N / (sum of the N segment times), ms_per_segment their
#     median, avg_ms, p90/p95/p99 by nearest rank: txlc bench's definitions, one repetition
#     (scripts/bench.sh runs txlc with --repetitions 1).
#   Differences: the reference recomputes the keys and values of the remembered positions every
#   segment (the authors' memory holds hidden states, txlc's default memory projected keys and
#   values: docs/MEMORY.md) and r_net over the positions (txlc folds it once): that is the
#   algorithm being compared, not a difference of harness. Threads: torch.set_num_threads(T), and
#   OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set to T before torch loads, OMP_WAIT_POLICY to
#   passive unless set (torch's OpenMP team would otherwise spin beside OpenBLAS's threads). Debian's torch calls the
#   system libblas.so.3 for its matrix products: with only the reference BLAS (libblas3) installed it
#   is about 100x slower; install OpenBLAS (apt-get install libopenblas0-pthread) first.
#
# torch.version.cuda is None in a CPU-only torch (Debian's python3-torch), and the authors'
# utils/proj_adaptive_softmax.py reads torch.version.cuda.split('.') at import (CUDA_MAJOR,
# CUDA_MINOR, used only in a comment). So that their file imports unedited, this script sets
# torch.version.cuda to "0.0" in its own process before importing it, and says so on stderr.
#
# Output: one CSV header and one row on stdout; progress on stderr. Errors: one line on stderr,
# exit 2 for a DIR without mem_transformer.py, a missing torch, a bad spec or a bad option; exit 1
# when the authors' code fails while running. --check stops after the imports and the spec (exit 0).
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time
import warnings

PROG = "bench/reference_bench.py"


class Usage(Exception):
    """A usage error: one line on stderr, exit 2."""


def progress(message):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Usage(message)


def parse_args(argv):
    p = Parser(prog=PROG, add_help=True)
    p.add_argument("spec", help="the model spec (bench/enwik8_base.json, ...)")
    p.add_argument("--authors-code", required=True, metavar="DIR",
                   help="the directory holding the authors' mem_transformer.py (their pytorch/)")
    p.add_argument("--qlen", type=int, help="tokens per segment (default: the spec's tgt_len)")
    p.add_argument("--mem-len", type=int, help="remembered positions (default: the spec's mem_len)")
    p.add_argument("--batch", type=int, default=1, help="streams (default 1)")
    p.add_argument("--segments", type=int, default=10, help="timed segments (default 10)")
    p.add_argument("--warmup", type=int, default=2, help="untimed segments after the prefill (default 2)")
    p.add_argument("--nll", action="store_true", help="also the NLL of random targets (adaptive softmax)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and tokens (default 0)")
    p.add_argument("--check", action="store_true", help="check the code, torch and the spec, then exit")
    a = p.parse_args(argv)
    for name, lo in (("qlen", 1), ("mem_len", 0), ("batch", 1), ("segments", 1), ("warmup", 0), ("threads", 1)):
        v = getattr(a, name)
        if v is not None and v < lo:
            kind = "a positive" if lo == 1 else "a non-negative"
            raise Usage(f"--{name.replace('_', '-')}: expected {kind} integer, got {v}")
    return a


def check_authors_dir(d):
    if not os.path.isdir(d):
        raise Usage(f"--authors-code {d}: not a directory (expected the pytorch/ directory of a clone of "
                    "https://github.com/kimiyoung/transformer-xl)")
    if not os.path.isfile(os.path.join(d, "mem_transformer.py")):
        raise Usage(f"--authors-code {d}: no mem_transformer.py there (expected the pytorch/ directory of a clone of "
                    "https://github.com/kimiyoung/transformer-xl)")


def read_spec(path):
    """The constructor arguments of MemTransformerLM from a spec in the authors' keys."""
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except OSError as e:
        raise Usage(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise Usage(f"{path}: invalid JSON: {e}") from None
    if not isinstance(j, dict):
        raise Usage(f"{path}: expected a JSON object, got {type(j).__name__}")

    def fail(key, message):
        raise Usage(f"{path}: /{key}: {message}")

    def integer(key, lo, default=None, required=False):
        if key not in j or (j[key] is None and not required):
            if required:
                fail(key, "required key is missing")
            return default
        v = j[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            fail(key, f"expected {'a positive' if lo >= 1 else 'a non-negative'} integer, got {json.dumps(v)}")
        return v

    def boolean(key, default):
        v = j.get(key, default)
        if not isinstance(v, bool):
            fail(key, f"expected true or false, got {json.dumps(v)}")
        return v

    if "model_type" in j or j.get("semantics", "authors") != "authors":
        fail("model_type" if "model_type" in j else "semantics",
             "a Hugging Face configuration; the authors' code runs specs in the authors' keys")
    s = {k: integer(k, 1, required=True) for k in ("n_token", "n_layer", "n_head", "d_model", "d_head", "d_inner")}
    d_embed = j.get("d_embed")
    if d_embed is None or d_embed == -1:
        s["d_embed"] = s["d_model"]
    else:
        s["d_embed"] = integer("d_embed", 1)
    s["div_val"] = integer("div_val", 1, 1)
    cutoffs = j.get("cutoffs", [])
    if not isinstance(cutoffs, list) or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in cutoffs) \
            or cutoffs != sorted(set(cutoffs)) or (cutoffs and cutoffs[-1] >= s["n_token"]):
        fail("cutoffs", f"expected increasing positive integers below n_token, got {json.dumps(cutoffs)}")
    s["cutoffs"] = cutoffs
    tie_projs = j.get("tie_projs", [False] * (len(cutoffs) + 1))
    if not isinstance(tie_projs, list) or len(tie_projs) != len(cutoffs) + 1 or \
            not all(isinstance(t, bool) for t in tie_projs):
        fail("tie_projs", f"expected {len(cutoffs) + 1} booleans (one per cluster), got {json.dumps(tie_projs)}")
    s["tie_projs"] = tie_projs
    s["tie_weight"] = boolean("tie_weight", True)
    s["pre_lnorm"] = boolean("pre_lnorm", False)
    s["same_length"] = boolean("same_length", False)
    if boolean("untie_r", False):
        fail("untie_r", "true, but the authors' PyTorch code shares r_w_bias and r_r_bias across layers")
    s["attn_type"] = integer("attn_type", 0, 0)
    if s["attn_type"] not in (0, 2):
        fail("attn_type", f"expected 0 (relative) or 2 (absolute), got {s['attn_type']}")
    clamp = j.get("clamp_len", -1)
    if isinstance(clamp, bool) or not isinstance(clamp, int) or clamp < -1:
        fail("clamp_len", f"expected -1 (no clamping) or a non-negative integer, got {json.dumps(clamp)}")
    s["clamp_len"] = clamp
    s["tgt_len"] = integer("tgt_len", 1)
    s["mem_len"] = integer("mem_len", 0)
    s["ext_len"] = integer("ext_len", 0, 0)
    eps = j.get("layer_norm_epsilon", 1e-5)
    if eps != 1e-5:
        fail("layer_norm_epsilon", f"the authors' code uses 1e-5, got {json.dumps(eps)}")
    return s


def import_torch():
    try:
        import torch  # noqa: PLC0415 (imported after the checks that need no torch)
    except ImportError as e:
        raise Usage(f"cannot import torch ({e}); install it: apt-get install python3-torch") from None
    return torch


def import_authors(torch, d):
    """MemTransformerLM from DIR/mem_transformer.py (which appends the relative 'utils' to sys.path)."""
    if torch.version.cuda is None:
        torch.version.cuda = "0.0"
        progress("torch.version.cuda is None (a CPU build): set to '0.0' for the authors' "
                 "utils/proj_adaptive_softmax.py, which splits it at import")
    d = os.path.abspath(d)
    # Their attention masks are uint8, which torch >= 1.2 accepts with a deprecation warning per process.
    warnings.filterwarnings("ignore", message="masked_fill_ received a mask with dtype torch.uint8")
    sys.path[:0] = [d, os.path.join(d, "utils")]
    try:
        import mem_transformer  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001 (any failure of their module is reported in one line)
        raise Usage(f"--authors-code {d}: importing mem_transformer.py failed: {type(e).__name__}: {e}") from None
    if not hasattr(mem_transformer, "MemTransformerLM"):
        raise Usage(f"--authors-code {d}: mem_transformer.py has no MemTransformerLM")
    return mem_transformer.MemTransformerLM


def random_weights(torch, model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 or name.endswith(("r_w_bias", "r_r_bias")):
                p.normal_(0.0, 0.02)
            elif "layer_norm.weight" in name:
                p.fill_(1.0)
            else:
                p.zero_()


def blas_library():
    """The BLAS library this process mapped (Debian's torch calls libblas.so.3): its last two path parts."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = [line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1]]
    except OSError:
        return "-"
    return "/".join(os.path.realpath(paths[0]).split("/")[-2:]) if paths else "-"


def nearest_rank(sorted_ms, q):
    return sorted_ms[max(1, math.ceil(q * len(sorted_ms))) - 1]


def run(a, spec, torch, MemTransformerLM):
    qlen = a.qlen if a.qlen is not None else spec["tgt_len"]
    mem_len = a.mem_len if a.mem_len is not None else spec["mem_len"]
    if qlen is None:
        raise Usage(f"{a.spec}: /tgt_len: required key is missing (or pass --qlen)")
    if mem_len is None:
        raise Usage(f"{a.spec}: /mem_len: required key is missing (or pass --mem-len)")
    torch.set_num_threads(a.threads)
    if blas_library().startswith("blas/libblas.so"):  # libblas3: /usr/lib/<triplet>/blas/libblas.so.3.*
        progress("warning: torch runs on the reference BLAS (libblas3), about 100x slower than OpenBLAS: "
                 "apt-get install libopenblas0-pthread")
    torch.manual_seed(a.seed)
    model = MemTransformerLM(
        spec["n_token"], spec["n_layer"], spec["n_head"], spec["d_model"], spec["d_head"], spec["d_inner"],
        dropout=0.0, dropatt=0.0, tie_weight=spec["tie_weight"], d_embed=spec["d_embed"], div_val=spec["div_val"],
        tie_projs=spec["tie_projs"], pre_lnorm=spec["pre_lnorm"], tgt_len=qlen, ext_len=spec["ext_len"],
        mem_len=mem_len, cutoffs=list(spec["cutoffs"]), same_length=spec["same_length"],
        attn_type=spec["attn_type"], clamp_len=spec["clamp_len"], sample_softmax=-1)
    random_weights(torch, model)
    model.eval()
    gen = torch.Generator().manual_seed(a.seed + 1)

    def tokens(n):
        return torch.randint(0, spec["n_token"], (n, a.batch), generator=gen, dtype=torch.long)

    def segment(mems):
        data = tokens(qlen)
        target = tokens(qlen) if a.nll else None
        t0 = time.perf_counter()
        if a.nll:
            out = model(data, target, *mems) if mems else model(data, target)
            mems = out[1:]
        else:
            _, mems = model._forward(data, mems=mems if mems else model.init_mems())
        return (time.perf_counter() - t0) * 1e3, (mems or [])

    with torch.no_grad():
        mems = model.init_mems() or []
        if mem_len > 0:
            progress(f"prefill: {mem_len} tokens")
            _, mems = model._forward(tokens(mem_len), mems=mems)
        for _ in range(a.warmup):
            _, mems = segment(mems)
        progress(f"{a.segments} timed segments of {qlen} tokens, {a.threads} threads")
        ms = []
        for _ in range(a.segments):
            t, mems = segment(mems)
            ms.append(t)
    s = sorted(ms)
    row = {
        "impl": "reference",
        "model": a.spec,
        "torch": torch.__version__,
        "blas": blas_library(),
        "threads": torch.get_num_threads(),
        "batch": a.batch,
        "qlen": qlen,
        "mem_len": mem_len,
        "mlen": mems[0].size(0) if mems else 0,
        "segments": a.segments,
        "warmup": a.warmup,
        "nll": str(a.nll).lower(),
        "tokens_per_s": f"{a.batch * qlen * a.segments / (sum(ms) / 1e3):.3f}",
        "ms_per_segment": f"{statistics.median(ms):.4f}",
        "avg_ms": f"{sum(ms) / len(ms):.4f}",
        "p90_ms": f"{nearest_rank(s, 0.90):.4f}",
        "p95_ms": f"{nearest_rank(s, 0.95):.4f}",
        "p99_ms": f"{nearest_rank(s, 0.99):.4f}",
        "peak_rss_process_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    print(",".join(row))
    print(",".join(str(v) for v in row.values()), flush=True)


def main(argv):
    try:
        a = parse_args(argv)
        check_authors_dir(a.authors_code)
        spec = read_spec(a.spec)
        # torch's OpenMP team and a pthreads BLAS's own pool (Debian's torch calls libblas.so.3,
        # OpenBLAS when installed) read these when they start: both get --threads.
        os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
        # While OpenBLAS's own threads run a product, torch's OpenMP team waits, and libgomp's
        # waiting threads spin on the same cores by default: passive waiting (unless the user set
        # a policy) gives the products the cores (enwik8 qlen 80, 2 threads: about 3x faster).
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        torch = import_torch()
        MemTransformerLM = import_authors(torch, a.authors_code)
        if a.check:
            return 0
        run(a, spec, torch, MemTransformerLM)
    except Usage as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 (a failure inside the authors' code or torch: one line)
        print(f"{PROG}: the reference run failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
