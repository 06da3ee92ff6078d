# tests/python/test_hostile.py - hostile arguments to every public entry point end in one clear
# exception (TypeError, ValueError or a txlc.Error other than InternalError), with bounded memory,
# never a crash, an internal error or a file the call must not touch: integer and float arrays
# that broadcast to 2^31..2^40 elements, objects made without their factory, copies and pickles,
# non-finite or misshapen memories, wrong-typed keywords and text that is not UTF-8, one
# Generation on several threads, outputs over the model's own files, NUL bytes and over-long
# paths; and a seeded random driver over all of it for a few seconds.
import copy
import hashlib
import json
import os
import pickle
import random
import resource
import shutil
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import MODELS, TESTS, read_safetensors

LIMIT = 1 << 26  # python/convert.h kMaxIdsElements


@pytest.fixture(scope="module")
def tiny_copy(txlc, tmp_path_factory):
    """The tiny_base model from copies in a temporary folder (a test that failed to refuse an
    overwrite would destroy only these)."""
    d = tmp_path_factory.mktemp("hostile")
    config = json.loads((TESTS / "conformance" / "tiny_base" / "case.json").read_text())["config"]
    (d / "spec.json").write_text(json.dumps(config))
    shutil.copy(TESTS / "conformance" / "tiny_base" / "weights.safetensors", d / "w.safetensors")
    return txlc.load(d / "spec.json", weights=d / "w.safetensors"), d


@pytest.fixture(scope="module")
def model(tiny_copy):
    return tiny_copy[0]


def max_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def huge(shape, dtype=np.int64):
    """An array of `shape` that takes a few bytes: every element is the same one."""
    return np.broadcast_to(np.ones((), dtype=dtype), shape)


HUGE_SHAPES = [(1 << 31,), (1 << 33, 1), (1, 1 << 31), (1 << 20, 1 << 20)]


# --- 1. arrays of 2^31..2^40 elements -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_huge_id_arrays_are_refused_from_their_shape(txlc, model, kjv_char, dtype):
    before = max_rss_bytes()
    s = model.session(batch=1)
    for shape in HUGE_SHAPES:
        size = int(np.prod(shape, dtype=np.int64))
        message = rf"^tokens: an integer array of {size} elements; at most {LIMIT} \(2\^26\)"
        with pytest.raises(txlc.InputError, match=message):
            s.forward(huge(shape, dtype))
        with pytest.raises(txlc.InputError, match=message):
            s.nll(huge(shape, dtype), huge(shape, dtype))
        with pytest.raises(txlc.InputError, match=rf"^targets: an integer array of {size} elements"):
            s.forward(np.ones((1,), np.int64), huge(shape, dtype))
        with pytest.raises(txlc.InputError, match=rf"^ids: an integer array of {size} elements"):
            model.score(huge(shape, dtype))
        with pytest.raises(txlc.InputError, match=rf"^ids: an integer array of {size} elements"):
            kjv_char.decode(huge(shape, dtype))
    # Under the size limit but longer than any segment: refused before anything is planned.
    with pytest.raises(txlc.InputError, match=r"^tokens: a segment of 2097152 tokens; at most 1048576"):
        s.forward(huge((1 << 21,), dtype))
    with pytest.raises(txlc.InputError, match=r"needs at least .* of RAM"):
        s.forward(huge((1 << 19,), dtype))
    assert s.mlen == 0  # nothing ran
    assert max_rss_bytes() - before < (1 << 30)


def test_huge_state_arrays_are_refused_from_their_shape(txlc, model):
    s = model.session(batch=1, mem_len=4)
    s.forward(np.arange(4, dtype=np.int64))
    state = s.state()
    before = max_rss_bytes()
    for shape in [(1 << 31,), (1 << 20, 1 << 20, 1), (4, 1 << 31, 8)]:
        bad = dict(state)
        bad["mem.0"] = huge(shape, np.float64)
        with pytest.raises(txlc.InputError, match=r"^state: tensor 'mem.0': expected f32\[mlen <= 4"):
            s.load_state(bad)
    assert max_rss_bytes() - before < (1 << 30)


# --- 2. objects only txlc makes ---------------------------------------------------------------------


def made_objects(txlc, model, kjv_char):
    return {
        txlc.Model: model,
        txlc.Session: model.session(batch=1),
        txlc.Generation: kjv_char.generate("In the", n=2),
    }


def test_no_object_is_made_copied_or_pickled_by_python(txlc, model, kjv_char):
    for cls, obj in made_objects(txlc, model, kjv_char).items():
        with pytest.raises(TypeError, match="cannot create"):
            cls()
        with pytest.raises(TypeError, match="cannot create"):
            cls.__new__(cls)
        with pytest.raises(TypeError):
            object.__new__(cls)
        with pytest.raises(TypeError, match="cannot copy or pickle"):
            copy.copy(obj)
        with pytest.raises(TypeError, match="cannot copy or pickle"):
            copy.deepcopy(obj)
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            with pytest.raises(TypeError, match="cannot copy or pickle"):
                pickle.dumps(obj, protocol=protocol)
        with pytest.raises(TypeError):

            class Derived(cls):  # final: no subclass can skip the factory
                pass


def call_arguments(name):
    """Arguments a constructed object's method `name` would take."""
    return {"score": ("abc",), "generate": ("abc",), "encode": ("abc",), "compile": ("unused.txla",),
            "score_documents": (["abc"],)}.get(name, ())


UNCONSTRUCTED = r"""
import copy, ctypes, pickle, sys
import numpy as np
import txlc

ARGS = {
    "forward": (np.zeros((1,), np.int64),),
    "nll": (np.zeros((1,), np.int64), np.zeros((1,), np.int64)),
    "load_state": ({},),
    "save_state": ("unused.safetensors",),
    "score": ("abc",),
    "generate": ("abc",),
    "encode": ("abc",),
    "decode": ([1],),
    "compile": ("unused.txla",),
    "score_documents": (["abc"],),
}
cls = getattr(txlc, sys.argv[1])
base = cls.__mro__[1]
# Sabotage past what Python allows (CPython 3.8+ PyTypeObject: tp_new is its 40th pointer-sized
# field): give the class pybind11's own tp_new, so that pybind11_object.__new__(cls) makes an instance
# with no C++ object behind it, and check that every method refuses it.
TP_NEW = 39 * ctypes.sizeof(ctypes.c_void_p)
ctypes.c_void_p.from_address(id(cls) + TP_NEW).value = ctypes.c_void_p.from_address(id(base) + TP_NEW).value
ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
obj = base.__new__(cls)
bad = []
names = [n for n in dir(cls) if not n.startswith("__")] + ["__repr__", "__str__", "__iter__", "__next__"]
for name in names:
    if name.startswith("__") and "__repr__" not in vars(cls) if name in ("__repr__", "__str__") else not hasattr(cls, name):
        continue  # object's own repr reads no C++ object
    try:
        value = getattr(obj, name)
        if callable(value):
            value(*ARGS.get(name, ()))
        bad.append(f"{name}: no exception")
    except TypeError as e:
        if "never constructed" not in str(e) and name not in ("__str__",):
            bad.append(f"{name}: TypeError {e}")
    except BaseException as e:
        bad.append(f"{name}: {type(e).__name__} {e}")
for call in (copy.copy, copy.deepcopy, pickle.dumps):
    try:
        call(obj)
        bad.append(f"{call.__name__}: no exception")
    except TypeError:
        pass
if cls is txlc.Model:
    try:
        txlc.compile(obj, "unused.txla")
        bad.append("txlc.compile: no exception")
    except TypeError:
        pass
print("; ".join(bad) or "ok")
"""


@pytest.mark.parametrize("name", ["Model", "Session", "Generation"])
def test_unconstructed_objects_refuse_every_method(name, tmp_path):
    # In a child: a failure here could be a crash.
    import txlc

    env = {**os.environ, "PYTHONPATH": os.path.dirname(txlc.__file__)}
    r = subprocess.run([sys.executable, "-c", UNCONSTRUCTED, name], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
    assert list(tmp_path.iterdir()) == []


def test_no_object_is_made_without_its_factory(txlc, model, kjv_char):
    for cls in made_objects(txlc, model, kjv_char):
        for base in cls.__mro__[1:]:
            with pytest.raises(TypeError):
                base.__new__(cls)
    with pytest.raises(TypeError):
        txlc.Session.forward(None, np.zeros((1,), np.int64))
    for method in ["session", "score", "generate", "inspect", "compile", "score_documents", "setting_for", "encode"]:
        with pytest.raises(TypeError):
            getattr(txlc.Model, method)(None, *call_arguments(method))
    with pytest.raises(TypeError):
        txlc.Generation.__iter__(None)
    with pytest.raises(TypeError):
        txlc.Generation.__next__(None)
    with pytest.raises(TypeError):
        txlc.Session.reset(None)


# --- 3. memories ----------------------------------------------------------------------------------


def test_non_finite_or_misshapen_memory_is_refused(txlc, model, tmp_path):
    s = model.session(batch=1, mem_len=4)
    s.forward(np.arange(4, dtype=np.int64))
    state = s.state()
    for value, word in [(np.nan, "NaN"), (np.inf, "Inf"), (-np.inf, "-Inf")]:
        bad = {k: v.copy() for k, v in state.items()}
        bad["mem.1"].reshape(-1)[5] = value
        with pytest.raises(txlc.InputError, match=rf'^state: tensor "mem.1": element 5 is {word} \(1 non-finite'):
            s.load_state(bad)
    with pytest.raises(txlc.InputError, match=r'^state: tensor "mem.0": expected a float32 array, got dtype int64'):
        s.load_state({**state, "mem.0": state["mem.0"].astype(np.int64)})
    with pytest.raises(txlc.InputError, match=r"^state: tensor 'mem.0': expected f32"):
        s.load_state({**state, "mem.0": state["mem.0"][:, :, :-1]})
    with pytest.raises(txlc.InputError, match=r"^state: holds tensor \"mem.99\""):
        s.load_state({**state, "mem.99": state["mem.0"]})
    with pytest.raises(TypeError, match=r"^state: expected str keys"):
        s.load_state({**state, 0: state["mem.0"]})
    with pytest.raises(ValueError, match=r"not valid UTF-8"):
        s.load_state({**state, "mem.\ud800": state["mem.0"]})
    with pytest.raises(TypeError, match=r"^state: expected a dict as state\(\) returns, or a state file's path, got list"):
        s.load_state([1])
    # A state file holding a NaN (its header and metadata right): refused naming the file and the tensor.
    path = tmp_path / "s.safetensors"
    s.save_state(path)
    tensors, _ = read_safetensors(path)
    data = bytearray(path.read_bytes())
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    begin = 8 + n + header["mem.0"]["data_offsets"][0]
    data[begin + 8 : begin + 12] = struct.pack("<f", float("nan"))
    path.write_bytes(bytes(data))
    with pytest.raises(txlc.InputError, match=r's\.safetensors: tensor "mem.0": element 2 is NaN'):
        s.load_state(path)
    # The memory was never changed by a refused state.
    after = s.state()
    assert all(np.array_equal(after[k], state[k]) for k in state)


# --- 4. wrong types -----------------------------------------------------------------------------------


def test_wrong_types_name_the_argument(txlc, model, kjv_char, tmp_path):
    cases = [
        (TypeError, r"^temperature: expected a number \(int or float\), got str$", lambda: kjv_char.generate("In", 2, temperature="hot")),
        (TypeError, r"^temperature: expected a number", lambda: kjv_char.generate("In", 2, temperature=True)),
        (TypeError, r"^top_k: expected an int, got float$", lambda: kjv_char.generate("In", 2, top_k=1.5)),
        (TypeError, r"^top_p: expected a number \(int or float\), got list$", lambda: kjv_char.generate("In", 2, top_p=[1])),
        (TypeError, r"^prompt: expected a str, got numpy.ndarray$", lambda: kjv_char.generate(np.zeros(3), 2)),
        (ValueError, r"^prompt: not valid UTF-8 text \(a lone surrogate at character 2\)$", lambda: kjv_char.generate("In\ud800", 2)),
        (ValueError, r"^text: not valid UTF-8", lambda: kjv_char.encode("\udcff")),
        (TypeError, r"^text: expected a str, got numpy.ndarray$", lambda: kjv_char.encode(np.array([1, 2]))),
        (TypeError, r"^text: expected a bool, got str$", lambda: model.score("abc", text="yes")),
        (TypeError, r"^weights: expected a str or an os.PathLike, got int$", lambda: txlc.load("x.json", weights=3)),
        (TypeError, r"^stage: expected a str, got int$", lambda: model.inspect(1)),
        (TypeError, r"^emit: expected a str, got int$", lambda: model.compile(tmp_path / "x.txla", 3)),
        (TypeError, r"^format: expected a str, got bytes$", lambda: model.score_documents(["a"], format=b"lines")),
        (ValueError, r"^corpus: a document: not valid UTF-8", lambda: kjv_char.score_documents(["a\ud800"])),
        (ValueError, r"^session\(\): a keyword: not valid UTF-8", lambda: model.session(**{"\ud800": 1})),
        (ValueError, r"^--backend: not valid UTF-8", lambda: model.session(backend="\ud800")),
        (txlc.SettingError, r"^--batch: expected a positive integer, got 'x'$", lambda: model.session(batch="x")),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()
    assert not (tmp_path / "x.txla").exists()


# --- 5. one Generation on several threads ----------------------------------------------------------


def test_one_generation_on_four_threads_is_one_sequence(kjv_char):
    n = 48
    one = kjv_char.generate("In the beginning", n, seed=7)
    want_pieces = list(one)
    g = kjv_char.generate("In the beginning", n, seed=7)
    pieces, errors = [], []

    def drain():
        try:
            for piece in g:
                pieces.append(piece)
        except Exception as e:  # noqa: BLE001 - any exception is the failure reported below
            errors.append(e)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert g.remaining == 0 and len(pieces) == n
    assert g.token_ids == one.token_ids and g.text == one.text
    assert sorted(pieces) == sorted(want_pieces)
    with pytest.raises(StopIteration):
        next(g)


# --- 6. outputs -------------------------------------------------------------------------------------


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_outputs_never_replace_the_models_files(txlc, tiny_copy, kjv_char, tmp_path):
    model, d = tiny_copy
    files = [d / "spec.json", d / "w.safetensors"]
    before = {f: digest(f) for f in files}
    for f in files:
        with pytest.raises(txlc.InputError, match=rf"{f.name}: is an input of this command \(.*\); txlc never overwrites its inputs$"):
            model.compile(f)
        with pytest.raises(txlc.InputError, match="txlc never overwrites its inputs"):
            txlc.compile(model, f)
        with pytest.raises(txlc.InputError, match="txlc never overwrites its inputs"):
            model.session().save_state(f)
    # By another name: a hard link is the same file.
    os.link(d / "w.safetensors", tmp_path / "link.safetensors")
    with pytest.raises(txlc.InputError, match="txlc never overwrites its inputs"):
        model.compile(tmp_path / "link.safetensors")
    kjv = MODELS / "kjv-char"
    kjv_files = [kjv / "config.json", kjv / "model.safetensors", kjv / "vocab.json"]
    kjv_before = {f: digest(f) for f in kjv_files}
    for f in kjv_files:
        with pytest.raises(txlc.InputError, match="txlc never overwrites its inputs"):
            kjv_char.session().save_state(f)
    assert {f: digest(f) for f in files} == before and {f: digest(f) for f in kjv_files} == kjv_before
    # A state file read by load_state is the session's own: save_state may replace it.
    s = model.session(batch=1)
    s.forward(np.arange(3, dtype=np.int64))
    s.save_state(tmp_path / "s.safetensors")
    s.load_state(tmp_path / "s.safetensors")
    s.save_state(tmp_path / "s.safetensors")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.safetensors", "s.safetensors"]


def test_nul_bytes_and_over_long_paths_are_named(txlc, model, tmp_path):
    s = model.session(batch=1)
    for call, what in [
        (lambda p: model.compile(p), "output"),
        (lambda p: txlc.compile(model, p), "output"),
        (lambda p: s.save_state(p), "path"),
        (lambda p: s.load_state(p), "state"),
        (lambda p: txlc.load(p), "path"),
        (lambda p: txlc.load(tmp_path / "spec.json", weights=p), "weights"),
        (lambda p: model.score(p), "text_or_path"),
    ]:
        with pytest.raises(txlc.InputError, match=rf'^{what}: ".*/a"\.\.\.: the path holds a NUL byte at byte \d+'):
            call(str(tmp_path / "a\0b"))
        with pytest.raises(txlc.InputError, match=rf"^{what}: .*: a name of 300 bytes in the path; at most 255 \(ENAMETOOLONG\)$"):
            call(tmp_path / ("n" * 300))
        with pytest.raises(txlc.InputError, match=rf"^{what}: .*: a path of 5\d\d\d bytes; at most 4095 \(ENAMETOOLONG\)$"):
            call(str(tmp_path) + "/d" * 2500)
    assert list(tmp_path.iterdir()) == []


# --- a seeded random driver -------------------------------------------------------------------------


class Weird:
    """An object no argument expects."""


def random_value(r, tmp):
    pools = [
        lambda: None,
        lambda: r.choice([True, False]),
        lambda: r.choice([0, 1, 2, 3, -1, 7, 97, 1 << 20, 1 << 31, 1 << 62, -(1 << 63), 1 << 70]),
        lambda: r.choice([0.0, 0.5, 1.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e308]),
        lambda: r.choice(["", "abc", "In the", "\ud800", "a\0b", "x" * 300, "onednn", "kv", "json", "0 1 2", "f32"]),
        lambda: r.choice([b"", b"abc", b"a\0b"]),
        lambda: r.choice([str(tmp / "out.txla"), tmp / "state.safetensors", tmp / "nope" / "x", str(tmp)]),
        lambda: [r.randrange(-2, 100) for _ in range(r.randrange(0, 5))],
        lambda: {"mem.0": np.zeros((1, 1, 1), np.float32)} if r.random() < 0.5 else {1: 2},
        lambda: np.asarray(r.choice([np.zeros((2,)), np.ones((3, 1), np.int32), np.arange(6).reshape(2, 3),
                                     np.array([], np.int64), np.array(["a"]), np.zeros((1, 1, 1), np.int64),
                                     np.array([-5, 200]), np.array([1.5]), np.array([np.nan])])),
        lambda: huge(r.choice(HUGE_SHAPES), r.choice([np.int64, np.int8, np.float32])),
        lambda: np.int64(r.randrange(-3, 100)),
        lambda: np.float32(r.choice([0.5, np.nan])),
        lambda: Weird(),
        lambda: (1, 2),
    ]
    return r.choice(pools)()


SETTING_VALUES = {
    "batch": [1, 2, 0, -1, 1 << 21, "two", 1.5, None],
    "qlen": [1, 4, 0, 1 << 21, True],
    "mem_len": [0, 4, -1, 1 << 21],
    "clamp_len": [-1, 2, "x"],
    "same_length": [True, False, 1],
    "initial_memory": ["zeros", "empty", "\ud800", 3],
    "threads": [1, 0, 5000, -1],
    "backend": ["onednn", "reference", "gpu"],
    "passes": ["none", ["dce"], "nope", [1]],
    "disable_pass": ["dce", ["nope"], 2],
    "memory": ["kv", "hidden", "x"],
    "precision": ["f32", "bf16", "int8", "f16"],
}


def random_setting(r):
    out = {}
    for _ in range(r.randrange(0, 3)):
        key = r.choice(list(SETTING_VALUES) + ["bogus"])
        out[key] = r.choice(SETTING_VALUES.get(key, [1]))
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy: the truth value of an empty array
def test_random_arguments_to_every_entry_point(txlc, model, kjv_char, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative path among the values is written here
    r = random.Random(41)
    tmp = tmp_path
    session = model.session(batch=1)
    gen = kjv_char.generate("In", n=4)

    def v():
        return random_value(r, tmp)

    def small_n():
        return r.choice([0, 1, 3, -1, "2", 2.0, None])

    calls = [
        lambda: txlc.load(v(), **random_setting(r)),
        lambda: txlc.load(v(), weights=v(), vocab=v(), random_weights=v(), seed=v()),
        lambda: txlc.compile(model, tmp / "c.txla", emit=v(), **random_setting(r)),
        lambda: txlc.compile(v(), v()),
        lambda: model.setting_for(**random_setting(r)),
        lambda: model.session(**random_setting(r)),
        lambda: model.score(v(), ids=v(), per_token=v(), text=v()),
        lambda: kjv_char.score(r.choice(["In the", "\ud800", "a\0b", np.arange(5), v()]), **random_setting(r)),
        lambda: kjv_char.generate(v(), small_n(), temperature=v(), top_k=v(), top_p=v(), greedy=r.choice([True, False]), stream=r.choice([True, False])),
        lambda: kjv_char.generate("In", r.choice([0, 2]), seed=v(), stream=False, **random_setting(r)),
        lambda: kjv_char.encode(v(), eos_at_end=v()),
        lambda: kjv_char.decode(v()),
        lambda: model.decode(v()),
        lambda: model.inspect(v(), v(), stats=v(), qlen=r.choice([None, 1, 4, 0, 1 << 30]), outputs=v()),
        lambda: model.compile(v(), v(), txlc=v()),
        lambda: kjv_char.score_documents(r.choice([["In the", "\ud800"], [{"text": "In"}], [v()], v()]), format=v(), max_tokens=r.choice([1, 100, 0])),
        lambda: session.forward(v()),
        lambda: session.forward(v(), v(), v()),
        lambda: session.forward(tokens=v(), targets=v(), logprob=v()),
        lambda: session.nll(v(), v()),
        lambda: session.load_state(v()),
        lambda: session.save_state(v()),
        lambda: session.reset(),
        lambda: session.state(),
        lambda: next(gen),
        lambda: getattr(r.choice([model, session, gen]), r.choice(["path", "setting", "mlen", "token_ids", "text", "spec"]), None),
    ]
    before = max_rss_bytes()
    deadline = time.monotonic() + 4.0
    runs = outcomes = 0
    while time.monotonic() < deadline and runs < 3000:
        call = r.choice(calls)
        runs += 1
        try:
            call()
        except txlc.InternalError as e:
            pytest.fail(f"call {runs}: an internal error: {e}")
        except (TypeError, ValueError, txlc.Error, StopIteration):
            outcomes += 1
        # Anything else (RuntimeError, MemoryError, SystemError) fails the test as it is raised.
        if r.random() < 0.05:
            gen = kjv_char.generate("In", n=4)
        if r.random() < 0.05:
            session = model.session(batch=1)
    print(f"{runs} calls, {outcomes} refused")
    assert runs >= 50 and outcomes > 0
    assert max_rss_bytes() - before < (1 << 30)
    # The session still works after all that.
    assert model.session(batch=1).forward(np.arange(3, dtype=np.int64)).hidden.shape == (3, model.d_model)
