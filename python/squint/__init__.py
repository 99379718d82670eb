"""squint: int8/int4 text embeddings on CPUs, from Python.

A thin ctypes binding over libsquint (include/squint.h): no compiled
extension, no pip; NumPy arrays out.

    import squint
    m = squint.Model("model.sqm")                 # or an fp32 checkpoint directory
    emb = m.embed(["a sentence", "another one"])  # numpy float32 [2, m.dim]
    r = squint.Model("reranker.sqm")              # a cross-encoder or Qwen3-Reranker
    r.rerank("what causes tides", docs, top_k=3)  # [(index, score), ...], best first

The library is found through $SQUINT_LIB (a path to libsquint.so*), else
the build tree next to this package (../build/libsquint/), else the system
loader (an installed libsquint.so.0). One Model may be shared by threads:
embed() releases the GIL while libsquint computes (ctypes does), and the
library's model is read-only.
"""

import ctypes
import os

import numpy as np

__all__ = ["Model", "SquintError", "library_version"]


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 1024)]


class _Options(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("max_seq", ctypes.c_int), ("batch", ctypes.c_int),
                ("normalize", ctypes.c_int), ("pooling", ctypes.c_int)]


class _ScoreOptions(ctypes.Structure):
    _fields_ = [("threads", ctypes.c_int), ("max_seq", ctypes.c_int), ("batch", ctypes.c_int),
                ("instruction", ctypes.c_char_p)]


class SquintError(RuntimeError):
    """A libsquint failure: .status is the squint_status name ("model", "input", ...)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _find_library():
    env = os.environ.get("SQUINT_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "build", "libsquint", "libsquint.so"),):
        if os.path.exists(cand):
            return cand
    return "libsquint.so.0"


# libgomp reads its wait policy once, when it is loaded: without this its
# waiting threads spin ~3-15 ms before they sleep, taking the CPU from the
# threads with work on a busy machine (cmd/omp_wait_policy.c). Set only while
# the library loads (the program's later subprocesses do not inherit it);
# the user's own setting wins; where libgomp is already loaded this changes
# nothing.
_spin = not any(k.startswith("OMP_WAIT_POLICY") for k in os.environ) and \
    "GOMP_SPINCOUNT" not in os.environ
if _spin:
    os.environ["GOMP_SPINCOUNT"] = "10000"
try:
    _lib = ctypes.CDLL(_find_library())
finally:
    if _spin:
        del os.environ["GOMP_SPINCOUNT"]
_lib.squint_version.restype = ctypes.c_char_p
_lib.squint_status_name.restype = ctypes.c_char_p
_lib.squint_status_name.argtypes = [ctypes.c_int]
_lib.squint_model_open.restype = ctypes.c_void_p
_lib.squint_model_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(_Error)]
_lib.squint_model_close.argtypes = [ctypes.c_void_p]
for _f in ("squint_model_dim", "squint_model_max_seq", "squint_model_is_quantized"):
    getattr(_lib, _f).restype = ctypes.c_int
    getattr(_lib, _f).argtypes = [ctypes.c_void_p]
_lib.squint_embed_options_init.argtypes = [ctypes.POINTER(_Options)]
_lib.squint_embed.restype = ctypes.c_int
_lib.squint_embed.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                              ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                              ctypes.POINTER(_Options), ctypes.POINTER(ctypes.c_float),
                              ctypes.POINTER(_Error)]
_lib.squint_precision_row_bytes.restype = ctypes.c_int
_lib.squint_precision_row_bytes.argtypes = [ctypes.c_int, ctypes.c_int]
_lib.squint_embed_codes.restype = ctypes.c_int
_lib.squint_embed_codes.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                                    ctypes.POINTER(_Options), ctypes.c_int, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_float), ctypes.c_void_p,
                                    ctypes.POINTER(_Error)]
_lib.squint_embed_dims.restype = ctypes.c_int
_lib.squint_embed_dims.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                   ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                                   ctypes.POINTER(_Options), ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_float), ctypes.POINTER(_Error)]

_lib.squint_model_kind_of.restype = ctypes.c_int
_lib.squint_model_kind_of.argtypes = [ctypes.c_void_p]
_lib.squint_score_options_init.argtypes = [ctypes.POINTER(_ScoreOptions)]
_lib.squint_score_pairs.restype = ctypes.c_int
_lib.squint_score_pairs.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                                    ctypes.POINTER(_ScoreOptions), ctypes.POINTER(ctypes.c_double),
                                    ctypes.POINTER(ctypes.c_float), ctypes.POINTER(_Error)]

# squint_model_kind
_KINDS = {0: "embedding", 1: "cross-encoder", 2: "judge"}
_POOLING = {None: 0, "cls": 1, "mean": 2}
# squint_precision: (enum value, numpy dtype of the codes)
_PRECISION = {"int8": (1, np.int8), "uint8": (2, np.uint8), "binary": (3, np.int8),
              "ubinary": (4, np.uint8)}


def library_version():
    """The libsquint version string, e.g. "0.1.0"."""
    return _lib.squint_version().decode()


def _c_int(name, v):
    """v as a C int, or SquintError(argument): no silent wrap modulo 2**32, no
    float or str taken for a count (a bool counts as 0 / 1)."""
    try:
        i = v.__index__()
    except (AttributeError, TypeError):
        raise SquintError("argument", "%s must be an integer, not %s" % (name, type(v).__name__))
    if not -2**31 <= i < 2**31:
        raise SquintError("argument", "%s %d is out of range" % (name, i))
    return i


def _utf8_list(name, texts):
    """texts (a str or a sequence of str) as a list of UTF-8 bytes."""
    if isinstance(texts, str):
        texts = [texts]
    data = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise SquintError("argument", "%s[%d] must be a str, not %s" % (name, i, type(t).__name__))
        data.append(t.encode("utf-8"))
    return data


def _raise(err):
    name = _lib.squint_status_name(err.code).decode()
    raise SquintError(name, err.message.decode("utf-8", "replace"))


class Model:
    """An open .sqm (int8/int4) or fp32 checkpoint. Close it, or use `with`."""

    def __init__(self, path):
        err = _Error()
        self._h = _lib.squint_model_open(os.fsencode(path), ctypes.byref(err))
        if not self._h:
            _raise(err)
        self.path = path
        self.dim = _lib.squint_model_dim(self._h)
        self.max_seq = _lib.squint_model_max_seq(self._h)
        self.quantized = bool(_lib.squint_model_is_quantized(self._h))
        # "embedding" (embed, and score by cosine), "cross-encoder" or "judge"
        # (a causal LM asked yes or no, as Qwen3-Reranker): score only
        self.kind = _KINDS.get(_lib.squint_model_kind_of(self._h), "embedding")

    def embed(self, texts, threads=0, max_seq=0, batch=0, normalize=None, pooling=None,
              dimensions=None, precision=None, ranges=None):
        """Embeddings of texts (a str or a sequence of str) as float32 [n, dim];
        the options are squint_embed_options' (0 / None: the model's).
        dimensions=N: Matryoshka, the first N values of each embedding,
        normalized again when the embeddings are (float32 [n, N]).
        precision="int8" / "uint8" (with ranges, [2, N] min and max rows),
        "binary" / "ubinary": sentence-transformers' quantize_embeddings codes,
        int8 or uint8 arrays [n, N] or [n, ceil(N / 8)]."""
        if self._h is None:
            raise ValueError("the model is closed")
        if self.kind != "embedding":
            raise SquintError("model", "%s is a %s: it scores pairs (score, rerank), it does not "
                              "embed" % (self.path, self.kind))
        data = _utf8_list("texts", texts)
        n = len(data)
        dims = self.dim if dimensions is None else _c_int("dimensions", dimensions)
        if not 1 <= dims <= self.dim:
            raise SquintError("argument", "dimensions %d is outside [1, %d]" % (dims, self.dim))
        # the output's precision and ranges, checked before anything runs (an
        # empty input too gets its dtype and width)
        code, dtype, rp = 0, np.float32, None
        if precision not in (None, "float32"):
            if precision not in _PRECISION:
                raise SquintError("argument", "precision must be float32, int8, uint8, binary or ubinary")
            code, dtype = _PRECISION[precision]
            if precision in ("int8", "uint8"):
                if ranges is None:
                    raise SquintError("argument", "precision %s needs ranges [2, %d]" % (precision, dims))
                r = np.ascontiguousarray(ranges, dtype=np.float32)
                if r.shape != (2, dims):
                    raise SquintError("argument", "ranges of shape %s; need (2, %d)" % (r.shape, dims))
                rp = r.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            elif ranges is not None:
                raise SquintError("argument", "ranges apply to int8 and uint8")
        elif ranges is not None:
            raise SquintError("argument", "ranges apply to int8 and uint8")
        width = dims if code == 0 else _lib.squint_precision_row_bytes(code, dims)
        out = np.empty((n, width), dtype=dtype)
        if n == 0:
            return out
        opts = _Options()
        _lib.squint_embed_options_init(ctypes.byref(opts))
        opts.threads = _c_int("threads", threads)
        opts.max_seq = _c_int("max_seq", max_seq)
        opts.batch = _c_int("batch", batch)
        # None: the model's; a bool or 0 / 1 as given (the library refuses the rest)
        opts.normalize = -1 if normalize is None else _c_int("normalize", normalize)
        if pooling not in _POOLING:
            raise ValueError("pooling must be None, 'cls' or 'mean'")
        opts.pooling = _POOLING[pooling]
        arr = (ctypes.c_char_p * n)(*data)
        lens = (ctypes.c_size_t * n)(*[len(d) for d in data])
        err = _Error()
        if code:
            rc = _lib.squint_embed_codes(self._h, arr, lens, n, ctypes.byref(opts), dims, code, rp,
                                         out.ctypes.data, ctypes.byref(err))
            if rc != 0:
                _raise(err)
            return out
        rc = _lib.squint_embed_dims(self._h, arr, lens, n, ctypes.byref(opts), dims,
                                    out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                    ctypes.byref(err))
        if rc != 0:
            _raise(err)
        return out

    def score(self, queries, documents, instruction=None, threads=0, max_seq=0, batch=0,
              logits=False):
        """Relevance of the pairs (queries[i], documents[i]) as float64 [n], as
        `squint rerank --pairs` scores them: an embedding model's cosine, a
        cross-encoder's activated logit, a judge's P(yes). A single str query
        is paired with every document (an embedding model embeds it once).
        instruction: a judge's <Instruct> line (None: Qwen3-Reranker's).
        logits=True: (scores, float32 logits [n]; NaN for an embedding model)."""
        if self._h is None:
            raise ValueError("the model is closed")
        docs = _utf8_list("documents", documents)
        n = len(docs)
        if isinstance(queries, str):
            q = queries.encode("utf-8")
            qs = [q] * n  # one object: one pointer, embedded once
        else:
            qs = _utf8_list("queries", queries)
            if len(qs) != n:
                raise SquintError("argument", "%d queries for %d documents" % (len(qs), n))
        scores = np.empty(n, dtype=np.float64)
        lg = np.empty(n, dtype=np.float32)
        if n:
            opts = _ScoreOptions()
            _lib.squint_score_options_init(ctypes.byref(opts))
            opts.threads = _c_int("threads", threads)
            opts.max_seq = _c_int("max_seq", max_seq)
            opts.batch = _c_int("batch", batch)
            if instruction is not None:
                if not isinstance(instruction, str):
                    raise SquintError("argument", "instruction must be a str")
                opts.instruction = instruction.encode("utf-8")
            qa = (ctypes.c_char_p * n)(*qs)
            ql = (ctypes.c_size_t * n)(*[len(x) for x in qs])
            da = (ctypes.c_char_p * n)(*docs)
            dl = (ctypes.c_size_t * n)(*[len(x) for x in docs])
            err = _Error()
            rc = _lib.squint_score_pairs(self._h, qa, ql, da, dl, n, ctypes.byref(opts),
                                         scores.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                         lg.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                         ctypes.byref(err))
            if rc != 0:
                _raise(err)
        return (scores, lg) if logits else scores

    def rerank(self, query, documents, top_k=None, **kw):
        """The documents for one query, best first: [(index, score), ...]
        (ties by the lower index, NaN last), at most top_k; the order of
        `squint rerank --query`. kw: score()'s options."""
        s = self.score(query, documents, **kw)
        order = sorted(range(len(s)), key=lambda i: (np.isnan(s[i]), -s[i] if not np.isnan(s[i]) else 0, i))
        if top_k is not None:
            order = order[:_c_int("top_k", top_k)]
        return [(i, float(s[i])) for i in order]

    def close(self):
        if self._h:
            _lib.squint_model_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
