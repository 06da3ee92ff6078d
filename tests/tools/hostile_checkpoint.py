"""tests/tools/hostile_checkpoint.py - torch zip checkpoints that fan out.

  hostile_checkpoint.py fan OUT
      One module whose 2,000 parameters are one tensor (BINGET of the same
      object), reached along 2,000 paths of a ModuleList: four million names
      from a 40 KB pickle.
  hostile_checkpoint.py ties SRC OUT N
      The state dict SRC (a pytorch_model.bin of float tensors) with N more
      names that view its first tensor's storage exactly as that tensor does:
      tied weights N times over. Every name of SRC is kept, so OUT imports as
      SRC does (with SRC's config.json beside it); the extra names are ties,
      stored once.

Written opcode by opcode (no torch), as the C++ tests' PickleBytes does. SRC
is read with pickle under a find_class that allows only the three globals of
a state dict and maps them to inert stand-ins, so nothing of SRC runs.
"""
import collections
import io
import pickle
import struct
import sys
import zipfile


class Pickle:
    def __init__(self):
        self.b = bytearray(b"\x80\x02")

    def op(self, c):
        self.b += c if isinstance(c, bytes) else bytes([c])
        return self

    def str(self, s):
        data = s.encode()
        return self.op(b"X" + struct.pack("<I", len(data)) + data)

    def int(self, v):
        if 0 <= v < 256:
            return self.op(b"K" + bytes([v]))
        return self.op(b"J" + struct.pack("<i", v))

    def ints(self, values):
        self.op(b"(")
        for v in values:
            self.int(v)
        return self.op(b"t")

    def glob(self, module, name):
        return self.op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def odict(self):
        return self.glob("collections", "OrderedDict").op(b")R")

    def tensor(self, kind="FloatStorage", key="0", numel=4, offset=0, sizes=(4,), strides=(1,)):
        self.glob("torch._utils", "_rebuild_tensor_v2").op(b"((")
        self.str("storage").glob("torch", kind).str(key).str("cpu").int(numel).op(b"tQ")
        self.int(offset).ints(sizes).ints(strides).op(0x89)
        return self.odict().op(b"tR")


def fan(out):
    n = 2000
    p = Pickle()
    p.glob("torch.nn.modules.container", "ModuleList").op(b")").op(0x81).op(b"}(").str("_parameters")
    p.odict().op(b"(").str("p0").tensor().op(b"q\x00")
    for i in range(1, n):
        p.str("p%d" % i).op(b"h\x00")
    p.op(b"uub").op(b"q\x01").op(b"0")
    p.glob("torch.nn.modules.container", "ModuleList").op(b")").op(0x81).op(b"}(").str("_modules")
    p.odict().op(b"(")
    for i in range(n):
        p.str("%d" % i).op(b"h\x01")
    p.op(b"uub.")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("fan/data.pkl", bytes(p.b))
        z.writestr("fan/data/0", bytes(16))
        z.writestr("fan/version", "3\n")


View = collections.namedtuple("View", "kind key numel offset sizes strides")


class StateDictReader(pickle.Unpickler):
    """A state dict's tensors as Views; any other global is refused."""

    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return lambda pid, offset, sizes, strides, *rest: View(pid[1], pid[2], pid[4], offset, sizes, strides)
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError("unexpected global %s.%s" % (module, name))

    def persistent_load(self, pid):
        return pid


def ties(src, out, n):
    with zipfile.ZipFile(src) as z:
        pkl = next(name for name in z.namelist() if name.endswith("/data.pkl"))
        top = pkl[: -len("/data.pkl")]
        state = StateDictReader(io.BytesIO(z.read(pkl))).load()
        storages = {v.key: z.read(top + "/data/" + v.key) for v in state.values()}
    p = Pickle()
    p.odict().op(b"(")
    for name, v in state.items():
        p.str(name).tensor(*v)
    first = next(iter(state.values()))
    for i in range(n):
        p.str("alias.%d" % i).tensor(*first)
    p.op(b"u.")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("ties/data.pkl", bytes(p.b))
        for key, data in storages.items():
            z.writestr("ties/data/" + key, data)
        z.writestr("ties/version", "3\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "fan":
        fan(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "ties":
        ties(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
