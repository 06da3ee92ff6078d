#!/usr/bin/env python3
# tests/tools/checkpoint_memory_test.py - loading a pytorch_model.bin holds its weights once.
#
# Generates a ~175 MB f32 Hugging Face checkpoint (scripts/make_torch_checkpoint.py,
# preset "medium") and runs `txlc info` on it. Its F32 storages are bound in
# place (views of the file's mapping), so the peak resident set grows by about
# the file's size over `txlc info` on a tiny checkpoint; a second copy of the
# weights (an in-memory safetensors image, or the tensors copied before
# binding) brings it to twice the size, past the bound of 1.5x checked here.
#
#   checkpoint_memory_test.py build/tools/txlc scripts/make_torch_checkpoint.py tests/data/checkpoints/hf_tiny
import os
import subprocess
import sys
import tempfile


def peak_kib(argv):
    """The peak resident set (KiB) of one run of argv, which must succeed."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"FAIL: {' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}: {err.strip()}")
    return usage.ru_maxrss


def main():
    txlc, generator, tiny = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="txlc-ckpt-mem-") as tmp:
        model = os.path.join(tmp, "medium")
        subprocess.run([sys.executable, generator, "--preset", "medium", model], check=True)
        size = os.path.getsize(os.path.join(model, "pytorch_model.bin"))
        base = peak_kib([txlc, "info", tiny])
        peak = peak_kib([txlc, "info", model])
    grown = (peak - base) * 1024
    limit = 1.5 * size
    print(f"checkpoint {size} bytes; txlc info peak RSS {peak} KiB, {base} KiB on {tiny}: grew {grown} bytes "
          f"({grown / size:.2f}x the file, limit 1.5x)")
    if grown > limit:
        sys.exit("FAIL: loading the checkpoint holds more than one copy of its weights")


if __name__ == "__main__":
    main()
