# tests/python/test_session.py - Session: shapes and dtypes, what forward() accepts, state
# save/restore bit for bit, reference counting, threads, and no leak over many sessions.
import gc
import os
import threading

import numpy as np
import pytest

from conftest import MODELS, TESTS, read_safetensors, run_txlc, spec_file

rng = np.random.default_rng(0)


def tokens(qlen, batch, n_token=97):
    return rng.integers(0, n_token, size=(qlen, batch), dtype=np.int64)


def test_forward_shapes_and_dtypes(tiny):
    s = tiny.session(batch=2)
    t = tokens(6, 2)
    out = s.forward(t, t)
    assert out.hidden.shape == (6, 2, tiny.d_model) and out.hidden.dtype == np.float32
    assert out.logprob.shape == (6, 2, 97) and out.logprob.dtype == np.float32
    assert out.nll.shape == (6, 2) and out.nll.dtype == np.float32
    # log-probabilities are normalised, and the NLL is minus the target's
    assert np.allclose(np.exp(out.logprob).sum(-1), 1, atol=1e-5)
    picked = np.take_along_axis(out.logprob, t[..., None], axis=-1)[..., 0]
    assert np.allclose(out.nll, -picked, atol=1e-5)
    assert s.mlen == 6
    hidden, logprob, nll = s.forward(t)
    assert nll is None and logprob.shape == (6, 2, 97)
    assert s.forward(t, logprob=False).logprob is None


def test_one_dimensional_tokens_are_batch_one(tiny):
    t = tokens(5, 1)
    a = tiny.session(batch=1).forward(t[:, 0], t[:, 0])
    b = tiny.session(batch=1).forward(t, t)
    assert a.hidden.shape == (5, tiny.d_model) and a.logprob.shape == (5, 97) and a.nll.shape == (5,)
    assert np.array_equal(a.hidden, b.hidden[:, 0]) and np.array_equal(a.nll, b.nll[:, 0])


def test_any_integer_array_or_list_is_accepted(tiny):
    t = tokens(4, 2)
    want = tiny.session(batch=2).forward(t).logprob
    for form in [t.astype(np.int32), t.astype(np.uint16), np.asfortranarray(t), t.tolist(),
                 np.ascontiguousarray(np.repeat(t, 2, axis=1)[:, ::2]),
                 np.repeat(t, 2, axis=1)[:, ::2], t.astype('>i8')]:  # a strided view, big-endian int64
        assert np.array_equal(tiny.session(batch=2).forward(form).logprob, want)


def test_results_are_copies_that_survive_the_next_segment(tiny):
    s = tiny.session(batch=2)
    first = s.forward(tokens(6, 2))
    kept = first.hidden.copy()
    s.forward(tokens(6, 2))
    assert np.array_equal(first.hidden, kept)
    first.hidden[:] = 0  # writable, and nobody else's


def test_results_held_in_any_form_never_change_and_dropped_ones_are_refilled(tiny):
    s = tiny.session(batch=2)
    t = [tokens(3, 2) for _ in range(6)]
    want = tiny.session(batch=2)  # the same segments, every result copied
    expected = [want.forward(x) for x in t[:4]]
    expected = [(e.hidden.copy(), e.logprob.copy()) for e in expected]
    for _ in range(4):
        want.forward(t[4])
    expected.append(None)
    expected.append(want.forward(t[5]).hidden.copy())
    out = s.forward(t[0])  # held as the Output
    hidden = s.forward(t[1]).hidden  # held as one array
    view = s.forward(t[2]).logprob[1:]  # a view
    mem = memoryview(s.forward(t[3]).hidden)  # a buffer
    for _ in range(4):
        s.forward(t[4])  # results dropped at once: refilled, not made again
    last = s.forward(t[5])
    assert np.array_equal(out.hidden, expected[0][0]) and np.array_equal(out.logprob, expected[0][1])
    assert np.array_equal(hidden, expected[1][0])
    assert np.array_equal(view, expected[2][1][1:])
    assert np.array_equal(np.asarray(mem), expected[3][0])
    assert np.array_equal(last.hidden, expected[5])
    ids = {id(s.forward(t[4]).hidden) for _ in range(3)}
    assert len(ids) == 1  # one array, filled again
    assert isinstance(last, tuple) and len(last) == 3 and last[0] is last.hidden
    assert repr(last).startswith("<txlc.Output hidden=(3, 2, ")


def test_forward_arguments_as_keywords_and_their_errors(tiny):
    import txlc
    s = tiny.session(batch=1)
    t = tokens(2, 1)
    a = s.forward(tokens=t, targets=t, logprob=False)
    assert a.logprob is None and a.nll.shape == (2, 1)
    assert s.forward(t, None, True).logprob.shape == (2, 1, 97)
    with pytest.raises(TypeError, match="unexpected keyword argument 'token'"):
        s.forward(token=t)
    with pytest.raises(TypeError, match="missing required argument 'tokens'"):
        s.forward()
    with pytest.raises(TypeError, match="multiple values for argument 'tokens'"):
        s.forward(t, tokens=t)
    with pytest.raises(TypeError, match="at most 3 arguments"):
        s.forward(t, t, True, 1)
    with pytest.raises(txlc.InputError):
        s.forward(np.zeros((2, 1), dtype=np.float32))


def test_nll_equals_forwards_nll(tiny):
    t, y = tokens(6, 2), tokens(6, 2)
    a, b, c = tiny.session(batch=2), tiny.session(batch=2), tiny.session(batch=2)
    for _ in range(3):
        got = a.nll(t, y)
        assert np.array_equal(got, b.forward(t, y, logprob=False).nll)  # the same plan
        assert np.allclose(got, c.forward(t, y).nll, atol=1e-4)  # the plan that also gives log-probabilities


def test_state_save_and_restore_continue_bit_for_bit(tiny, tmp_path):
    segs = [tokens(6, 2) for _ in range(4)]
    full = tiny.session(batch=2)
    for t in segs[:2]:
        full.forward(t)
    state = full.state()
    assert sorted(state) == [f"mem.{i}" for i in range(len(state))]
    for v in state.values():
        assert v.dtype == np.float32 and v.shape[:2] == (6, 2)
    full.save_state(tmp_path / "s.safetensors")
    rest = [full.forward(t, t) for t in segs[2:]]

    for restore in [state, tmp_path / "s.safetensors", str(tmp_path / "s.safetensors")]:
        other = tiny.session(batch=2)
        other.load_state(restore)
        assert other.mlen == 6
        for t, want in zip(segs[2:], rest):
            got = other.forward(t, t)
            assert np.array_equal(got.hidden, want.hidden)
            assert np.array_equal(got.logprob, want.logprob)
            assert np.array_equal(got.nll, want.nll)
    # The file is the command line's state format: txlc run --state-in reads it.
    _, meta = read_safetensors(tmp_path / "s.safetensors")
    assert meta["format"] == "txlc-state/1" and meta["model_id"] == tiny.model_id and meta["mlen"] == "6"


def test_state_file_is_the_command_lines(tiny, tmp_path):
    # txlc run --state-out, then Session.load_state of that file, gives txlc run --state-in's figures.
    spec = spec_file("tiny_base")
    w = TESTS / "conformance" / "tiny_base" / "weights.safetensors"
    run_txlc("run", spec, "--weights", w, "--tokens", "1 2 3 4 5 6", "--qlen", 6, "--state-out", tmp_path / "a.st")
    cli = run_txlc("run", spec, "--weights", w, "--tokens", "7 8 9", "--state-in", tmp_path / "a.st", "--format",
                   "safetensors", "-o", tmp_path / "out.st")
    want, _ = read_safetensors(tmp_path / "out.st")
    s = tiny.session(batch=1)
    s.load_state(tmp_path / "a.st")
    got = s.forward(np.array([[7], [8], [9]]))
    assert np.array_equal(got.hidden, want["hidden"]) and np.array_equal(got.logprob, want["logprob"])


def test_reset_starts_a_fresh_stream(tiny):
    t = tokens(6, 2)
    s = tiny.session(batch=2)
    first = s.forward(t).hidden
    s.forward(t)
    s.reset()
    assert s.mlen == 0
    assert np.array_equal(s.forward(t).hidden, first)


def test_a_session_outlives_its_model_variable(txlc):
    m = txlc.load(spec_file("tiny_base"), weights=TESTS / "conformance" / "tiny_base" / "weights.safetensors")
    t = tokens(6, 2)
    want = m.session(batch=2).forward(t).hidden
    s = m.session(batch=2)
    del m
    gc.collect()
    assert np.array_equal(s.forward(t).hidden, want)
    assert s.model.n_token == 97  # and the model is still there to ask


def test_four_threads_give_what_one_after_the_other_gives(kjv_char):
    streams = [rng.integers(0, kjv_char.n_token, size=(64 * 6, 1), dtype=np.int64) for _ in range(4)]

    def run(ids):
        s = kjv_char.session()
        return [s.forward(ids[i : i + 64], ids[i : i + 64]).nll for i in range(0, len(ids), 64)]

    sequential = [run(ids) for ids in streams]
    parallel = [None] * 4

    def work(k):
        parallel[k] = run(streams[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for a, b in zip(sequential, parallel):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_one_session_on_two_threads_waits_instead_of_racing(tiny):
    s = tiny.session(batch=2)
    errors = []

    def work():
        try:
            for _ in range(50):
                s.forward(tokens(3, 2))
        except Exception as e:  # pragma: no cover - the failure is what is checked
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and s.mlen == 6


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="under ASan freed memory waits in its quarantine: resident memory grows without a leak")
def test_no_leak_over_a_thousand_sessions(tiny):
    t = tokens(6, 2)

    def churn(n):
        for _ in range(n):
            s = tiny.session(batch=2)
            s.forward(t, t)
            s.state()
            del s

    churn(100)  # warm: the compiled model, allocator pools
    gc.collect()
    before = rss_kib()
    churn(1000)
    gc.collect()
    grown = rss_kib() - before
    # A leaked session would keep its plans and windows (tens of KiB each): 1000 of them show.
    assert grown < 8 * 1024, f"resident memory grew {grown} KiB over 1000 sessions"
