"""tests/tools/hostile_checkpoint.py OUT - a torch zip checkpoint whose memo fans one module out.

One module whose 2,000 parameters are one tensor (BINGET of the same object),
reached along 2,000 paths of a ModuleList: four million names from a 40 KB
pickle. Written opcode by opcode (no torch, no pickle module), as the C++
tests' PickleBytes does.
"""
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
        return self.op(b"K" + bytes([v]))

    def glob(self, module, name):
        return self.op(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def odict(self):
        return self.glob("collections", "OrderedDict").op(b")R")

    def tensor(self):
        self.glob("torch._utils", "_rebuild_tensor_v2").op(b"((")
        self.str("storage").glob("torch", "FloatStorage").str("0").str("cpu").int(4).op(b"tQ")
        self.int(0).op(b"(").int(4).op(b"t(").int(1).op(b"t").op(0x89)
        return self.odict().op(b"tR")


N = 2000
p = Pickle()
p.glob("torch.nn.modules.container", "ModuleList").op(b")").op(0x81).op(b"}(").str("_parameters")
p.odict().op(b"(").str("p0").tensor().op(b"q\x00")
for i in range(1, N):
    p.str("p%d" % i).op(b"h\x00")
p.op(b"uub").op(b"q\x01").op(b"0")
p.glob("torch.nn.modules.container", "ModuleList").op(b")").op(0x81).op(b"}(").str("_modules")
p.odict().op(b"(")
for i in range(N):
    p.str("%d" % i).op(b"h\x01")
p.op(b"uub.")
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_STORED) as z:
    z.writestr("fan/data.pkl", bytes(p.b))
    z.writestr("fan/data/0", bytes(16))
    z.writestr("fan/version", "3\n")
