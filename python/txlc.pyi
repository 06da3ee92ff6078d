# txlc.pyi - type stub of the txlc extension module (python/*.cpp), installed beside it.
# docs/PYTHON.md is the reference; every call's docstring says the same with shapes and dtypes.
import os
from typing import Any, Iterable, Iterator, Literal, Mapping, NoReturn, Sequence, final, overload

import numpy as np
import numpy.typing as npt

__version__: str
SETTING_KEYS: tuple[str, ...]

_Path = str | os.PathLike[str]
_Ids = npt.ArrayLike  # integer array [qlen, batch] or [qlen], or a (nested) sequence of int

class Error(Exception):
    """Any problem txlc reports: the command line's one-line message."""

class InputError(Error, ValueError):
    """A spec, weights, artifact, state, text or token-id input is wrong."""

class SettingError(Error, ValueError):
    """A setting is out of range, unknown, or needs more memory than the machine has."""

class InternalError(Error):
    """A bug in txlc."""

class Output(tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None]):
    """What Session.forward() returns: a named tuple (hidden, logprob, nll)."""
    n_fields: int
    n_sequence_fields: int
    n_unnamed_fields: int
    hidden: npt.NDArray[np.float32]
    """float32 [qlen, batch, d_model] (or [qlen, d_model] for 1-D tokens)."""
    logprob: npt.NDArray[np.float32] | None
    """float32 [qlen, batch, n_token] (or [qlen, n_token]); None with logprob=False."""
    nll: npt.NDArray[np.float32] | None
    """float32 [qlen, batch] (or [qlen]); None without targets."""

@final
class Session:
    """Streams of tokens with their recurrent memory (Model.session()); never made, copied or pickled by Python."""
    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn: ...
    def __copy__(self) -> NoReturn: ...
    def __deepcopy__(self, memo: Any) -> NoReturn: ...
    def __reduce__(self) -> NoReturn: ...
    @property
    def mlen(self) -> int: ...
    @property
    def batch(self) -> int: ...
    @property
    def qlen(self) -> int: ...
    @property
    def mem_len(self) -> int: ...
    @property
    def setting(self) -> dict[str, Any]: ...
    @property
    def model(self) -> Model: ...
    @property
    def plan_count(self) -> int: ...
    def forward(self, tokens: _Ids, targets: _Ids | None = None, logprob: bool = True) -> Output:
        """Runs one segment: tokens int64 [qlen, batch] (or [qlen]); returns float32 hidden
        [qlen, batch, d_model], logprob [qlen, batch, n_token], nll [qlen, batch] (with targets)."""
    def nll(self, tokens: _Ids, targets: _Ids) -> npt.NDArray[np.float32]:
        """Runs one segment; returns the NLL of targets, float32 [qlen, batch] (or [qlen])."""
    def reset(self) -> None: ...
    def state(self) -> dict[str, npt.NDArray[np.float32]]:
        """{"mem.<slot>": float32 [mlen, batch, width]}."""
    def load_state(self, state: Mapping[str, npt.ArrayLike] | _Path) -> None: ...
    def save_state(self, path: _Path) -> None: ...

@final
class Generation(Iterator[str]):
    """Yields the text of each generated token as it is chosen; safe to iterate from several threads
    (each next() is whole). Never made, copied or pickled by Python."""
    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn: ...
    def __copy__(self) -> NoReturn: ...
    def __deepcopy__(self, memo: Any) -> NoReturn: ...
    def __reduce__(self) -> NoReturn: ...
    @property
    def token_ids(self) -> list[int]: ...
    @property
    def text(self) -> str: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def remaining(self) -> int: ...
    def __iter__(self) -> Generation: ...
    def __next__(self) -> str: ...

@final
class Model:
    """A model opened by txlc.load(); never made, copied or pickled by Python."""
    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn: ...
    def __copy__(self) -> NoReturn: ...
    def __deepcopy__(self, memo: Any) -> NoReturn: ...
    def __reduce__(self) -> NoReturn: ...
    @property
    def path(self) -> str: ...
    @property
    def model_id(self) -> str: ...
    @property
    def spec(self) -> dict[str, Any]: ...
    @property
    def n_token(self) -> int: ...
    @property
    def n_layer(self) -> int: ...
    @property
    def d_model(self) -> int: ...
    @property
    def semantics(self) -> Literal["authors", "huggingface"]: ...
    @property
    def vocabulary(self) -> Literal["char", "word"] | None: ...
    @property
    def setting(self) -> dict[str, Any]: ...
    def setting_for(self, **setting: Any) -> dict[str, Any]: ...
    def session(
        self,
        *,
        batch: int | None = ...,
        qlen: int | None = ...,
        mem_len: int | None = ...,
        clamp_len: int | None = ...,
        same_length: bool | None = ...,
        initial_memory: Literal["zeros", "empty"] | None = ...,
        threads: int | None = ...,
        thread_policy: Literal["auto", "idle", "loaded"] | None = ...,
        backend: Literal["onednn", "reference"] | None = ...,
        passes: str | Sequence[str] | None = ...,
        disable_pass: str | Sequence[str] | None = ...,
        memory: Literal["kv", "hidden"] | None = ...,
        precision: Literal["f32", "bf16", "int8"] | None = ...,
    ) -> Session: ...
    @overload
    def score(
        self,
        text_or_path: list[str] | tuple[str, ...],
        *,
        ids: bool = False,
        per_token: bool = False,
        text: bool | None = None,
        **setting: Any,
    ) -> list[dict[str, Any]]: ...
    @overload
    def score(
        self,
        text_or_path: str | os.PathLike[str] | _Ids,
        *,
        ids: bool = False,
        per_token: bool = False,
        text: bool | None = None,
        **setting: Any,
    ) -> dict[str, Any]: ...
    def score_documents(
        self,
        corpus: _Path | Iterable[Mapping[str, Any]] | Iterable[str],
        *,
        format: Literal["auto", "lines", "jsonl"] = "auto",
        max_tokens: int = 1048576,
        strict: bool = False,
        **setting: Any,
    ) -> dict[str, Any]: ...
    @overload
    def generate(
        self,
        prompt: str,
        n: int = 200,
        *,
        temperature: float | None = None,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
        greedy: bool = False,
        stream: Literal[True] = True,
        **setting: Any,
    ) -> Generation: ...
    @overload
    def generate(
        self,
        prompt: str,
        n: int = 200,
        *,
        temperature: float | None = None,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int = 0,
        greedy: bool = False,
        stream: Literal[False],
        **setting: Any,
    ) -> str: ...
    def encode(self, text: str, *, eos_at_end: bool = True) -> npt.NDArray[np.int64]: ...
    def decode(self, ids: _Ids) -> str: ...
    @overload
    def inspect(
        self,
        stage: Literal["input", "optimized"] = "optimized",
        format: Literal["text", "dot"] = "text",
        *,
        stats: bool = False,
        qlen: int | None = None,
        mlen: int | None = None,
        batch: int = 1,
        outputs: Literal["logprob,nll", "nll,logprob", "nll", "logprob", "hidden"] = "logprob,nll",
        **pipeline: Any,
    ) -> str: ...
    @overload
    def inspect(
        self,
        stage: Literal["input", "optimized"],
        format: Literal["json"],
        *,
        stats: bool = False,
        qlen: int | None = None,
        mlen: int | None = None,
        batch: int = 1,
        outputs: Literal["logprob,nll", "nll,logprob", "nll", "logprob", "hidden"] = "logprob,nll",
        **pipeline: Any,
    ) -> dict[str, Any]: ...
    def compile(
        self, output: _Path, emit: Literal["artifact", "exe"] = "artifact", *, txlc: _Path | None = None, **setting: Any
    ) -> dict[str, Any]: ...

def load(
    path: _Path,
    weights: _Path | None = None,
    vocab: _Path | None = None,
    *,
    random_weights: bool = False,
    seed: int = 0,
    tokenizer: Literal["whitespace", "hf"] | None = None,
    thread_policy: Literal["auto", "idle", "loaded"] | None = None,
    **setting: Any,
) -> Model:
    """Opens a model directory, a spec file with weights=, an artifact or a checkpoint folder."""

def compile(
    model_or_path: Model | _Path,
    output: _Path,
    emit: Literal["artifact", "exe"] = "artifact",
    *,
    weights: _Path | None = None,
    vocab: _Path | None = None,
    random_weights: bool = False,
    seed: int = 0,
    txlc: _Path | None = None,
    thread_policy: Literal["auto", "idle", "loaded"] | None = None,
    **setting: Any,
) -> dict[str, Any]:
    """Writes an artifact or a standalone executable; returns the `txlc compile --json` summary."""
