"""GGUF version 3, as llama.cpp's loader (gguf.cpp) reads it: the part every model's writer shares
(gguf_gpt2.py, gguf_llama.py). All integers little-endian:

    "GGUF"  u32 version = 3  u64 tensor count  u64 key/value count
    key/value pairs:  string key, u32 value type, value
    tensor infos:     string name, u32 n_dims, u64 dims[n_dims] (innermost first), u32 ggml type,
                      u64 offset of the data from the start of the data section (a multiple of ALIGNMENT)
    zero padding to ALIGNMENT, then the data section (each tensor's bytes, padded to ALIGNMENT)

A string is a u64 byte length and UTF-8 bytes; an array value is u32 element type, u64 count,
elements. Writer.add takes every value type (numbers, bool, string, and arrays of any of them,
arrays of arrays too: tfmc's reader tests use them); a Writer(alignment=N) other than 32 writes
general.alignment. Dims are ggml's order, the reverse of numpy's: a PyTorch Linear weight [out, in] is
written as dims [in, out], its rows unchanged.

Tensor encodings:

    F32  (ggml type 0): IEEE single.
    BF16 (ggml type 30): the top 16 bits of the f32 after rounding to nearest even.
    Q8_0 (ggml type 8): each row cut into blocks of 32 consecutive values; a block is 34 bytes:
         an IEEE half scale d = max|x| / 127 (rounded to half), then 32 int8 q = round(x / d)
         (ties to even, clamped to [-127, 127]; d = 0 gives q = 0). The value is q * d.
         The row length must be a multiple of 32.
    Q4_0 (ggml type 2): blocks of 32 consecutive values of a row, 18 bytes each, as ggml's
         quantize_row_q4_0_ref (ggml-quants.c) makes them: max = the first value of largest |x|
         (with its sign), d = max / -8, id = 1 / d (0 when d = 0), q = min(15, (int8)(x * id + 8.5))
         (f32 arithmetic, the cast truncating), then the block: d as an IEEE half (round to
         nearest even), 16 bytes, byte j = q[j] | q[j + 16] << 4. The value is (q - 8) * d.
    Q5_0 (ggml type 6): blocks of 32 consecutive values of a row, 22 bytes each, as ggml's
         quantize_row_q5_0_ref (ggml-quants.c) makes them: max = the first value of largest |x|
         (with its sign), d = max / -16, id = 1 / d (0 when d = 0), q = min(31, (int8)(x * id +
         16.5)) (f32 arithmetic, the cast truncating), then the block: d as an IEEE half, qh (a
         little-endian u32: bit j is q_j's fifth bit), 16 bytes, byte j = (q[j] & 15) | (q[j + 16]
         & 15) << 4. The value is (q - 16) * d.
    IQ4_NL (ggml type 20): blocks of 32 consecutive values of a row, 18 bytes each: an IEEE half
         d, then 16 bytes of 4-bit indices into ggml's kvalues_iq4nl (IQ4_NL_VALUES: 16 levels
         from -127 to 113), byte j = i[j] | i[j + 16] << 4. The value is d * IQ4_NL_VALUES[i].
         Not ggml's quantiser (quantize_iq4_nl searches 15 scales for the least x²-weighted
         error): a plain one, for readers' tests: d = f16(max / -127) (max the first value of
         largest |x|, with its sign, so that it is the level -127), each i the level nearest
         x / f32(d) (the lower on a tie); d = 0 (an all-zero block) gives i = 8 (the level 1).
    Q6_K (ggml type 14): super-blocks of 256 values of a row, 210 bytes each (ql[128], qh[64],
         int8 scales[16], half d), as ggml's quantize_row_q6_K_ref makes them: each 16-value
         sub-block's scale from make_qx_quants(16, 32, x, L, rmse_type 1) (a search over 19 scales
         for the least x²-weighted squared error), the scales quantised to int8 against the
         super-block's d = -max_scale / 128, the values re-quantised to 6 bits against d·scale.
         The value is d * scale * (q - 32). llama.cpp's llama-quantize gives it to the output
         head of a Q4_0 file (output_type below). The row length must be a multiple of 256.

    Q4_K, Q5_K (ggml types 12, 13): super-blocks of 256 values, 144 and 176 bytes (f16 d, dmin;
         12 bytes of eight 6-bit sub-block scales and mins, packed as get_scale_min_k4 reads them;
         Q5_K: qh[32], the fifth bits; qs[128], two 4-bit values a byte: sub-block 2k in the low
         nibbles of bytes 32k..32k+31, 2k+1 in the high). The value of sub-block j is
         d·sc_j·q − dmin·m_j, q in [0, 15] (Q4_K) or [0, 31] (Q5_K). Not ggml's quantiser (its
         make_qkx2_quants searches scales and mins): a plain one, for readers' tests: per
         sub-block of 32, min = min(0, min x), scale = (max x − min) / qmax; d = max scale / 63,
         dmin = max(−min) / 63 as halves, sc_j and m_j rounded to 6 bits, q = round((x + dmin·m_j)
         / (d·sc_j)) clamped. A valid block either way: what a reader must get is its value.

What llama.cpp's own `llama-quantize MODEL OUT Q4_0` writes (llama-quant.cpp,
tensor_allows_quantization and llama_tensor_get_type): every 2-D ".weight" that is not a norm and
not the learned position embedding becomes Q4_0, except the output head, "output.weight" (and
"token_embd.weight" when the model has no output.weight, i.e. a tied head such as GPT-2's), which
becomes Q6_K (Q8_0 if its row length is not a multiple of 256); token_embd of a model with its own
output head stays Q4_0; 1-D tensors (norms, biases) and position_embd stay as they are (F32 here).
Nothing else changes for Q4_0 without an importance matrix. output_type() states that rule; the
model writers (gguf_gpt2.py, gguf_llama.py) apply it, so that their Q4_0 files hold what a user's
Q4_0 file of these architectures holds. F32, BF16 and Q8_0 keep the head in the file's type
(llama-quantize's Q8_0 leaves a Q8_0 head as it is).

Tensors are kept as the arrays given (a memory map stays one) and encoded one at a time while the
file is written, so a model of several GB is never held encoded in memory.
"""
import os
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32  # llama.cpp's default (general.alignment absent)

# gguf value types (gguf.h's enum gguf_type)
(T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY,
 T_UINT64, T_INT64, T_FLOAT64) = range(13)
# Numbers and bools: their little-endian numpy type (one element).
SCALAR_DTYPE = {T_UINT8: "<u1", T_INT8: "<i1", T_UINT16: "<u2", T_INT16: "<i2", T_UINT32: "<u4",
                T_INT32: "<i4", T_FLOAT32: "<f4", T_BOOL: "?", T_UINT64: "<u8", T_INT64: "<i8",
                T_FLOAT64: "<f8"}
# ggml tensor types (ggml.h's enum ggml_type)
GGML_F32, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K, GGML_BF16 = 0, 2, 8, 12, 13, 14, 30
GGML_Q5_0, GGML_IQ4_NL = 6, 20
DTYPES = {"f32": GGML_F32, "bf16": GGML_BF16, "q8_0": GGML_Q8_0, "q4_0": GGML_Q4_0}
# Types a writer may give one tensor (gguf_llama.py --type): DTYPES, the K-quants, Q5_0 and IQ4_NL.
TENSOR_TYPES = dict(DTYPES, q6_k=GGML_Q6_K, q4_k=GGML_Q4_K, q5_k=GGML_Q5_K, q5_0=GGML_Q5_0,
                    iq4_nl=GGML_IQ4_NL)
Q8_0_BLOCK = 32
Q4_0_BLOCK = 32
Q5_0_BLOCK = 32
IQ4_NL_BLOCK = 32
QK_K = 256  # a Q6_K super-block
# ggml-common.h's kvalues_iq4nl: IQ4_NL's levels.
IQ4_NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                         dtype=np.int8)
# A block's bytes and values, by type.
BLOCK = {GGML_F32: (4, 1), GGML_BF16: (2, 1), GGML_Q8_0: (2 + Q8_0_BLOCK, Q8_0_BLOCK),
         GGML_Q4_0: (2 + Q4_0_BLOCK // 2, Q4_0_BLOCK), GGML_Q6_K: (QK_K // 2 + QK_K // 4 + QK_K // 16 + 2, QK_K),
         GGML_Q4_K: (144, QK_K), GGML_Q5_K: (176, QK_K),
         GGML_Q5_0: (2 + 4 + Q5_0_BLOCK // 2, Q5_0_BLOCK), GGML_IQ4_NL: (2 + IQ4_NL_BLOCK // 2, IQ4_NL_BLOCK)}
TYPE_NAMES = {GGML_F32: "F32", GGML_BF16: "BF16", GGML_Q8_0: "Q8_0", GGML_Q4_0: "Q4_0", GGML_Q6_K: "Q6_K",
              GGML_Q4_K: "Q4_K", GGML_Q5_K: "Q5_K", GGML_Q5_0: "Q5_0", GGML_IQ4_NL: "IQ4_NL"}
GROUP_MAX_EPS = np.float32(1e-15)  # ggml-quants.c: a group whose largest |x| is below it is all zero
# Rows encoded at a time: bounds the temporary copies of a large tensor.
CHUNK_ELEMENTS = 1 << 24


def bf16_bytes(a):
    """f32 -> bf16 bits, round to nearest even (NaN is not expected in weights)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16).tobytes()


def q8_0_parts(a):
    """[..., cols] f32 (cols a multiple of 32) -> (q [blocks, 32] int8, scale [blocks] float16),
    block by block along each row, as q8_0_bytes writes them."""
    blocks = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, Q8_0_BLOCK)
    scale = (np.abs(blocks).max(axis=1) / 127.0).astype(np.float16)
    s32 = scale.astype(np.float32)
    inv = np.divide(1.0, s32, out=np.zeros_like(s32), where=s32 != 0)
    q = np.clip(np.rint(blocks * inv[:, None]), -127, 127).astype(np.int8)
    return q, scale


def q8_0_bytes(a):
    """[rows, cols] f32 -> Q8_0 blocks, row-major, 34 bytes per 32 values."""
    q, scale = q8_0_parts(a)
    out = np.empty((q.shape[0], 2 + Q8_0_BLOCK), dtype=np.uint8)
    out[:, :2] = scale.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def _offset_levels(a, block, half):
    """ggml's quantize_row_q4_0_ref (half 8) and quantize_row_q5_0_ref (half 16) on [..., cols]
    f32 (cols a multiple of `block`) -> (q [blocks, block] uint8 in 0..2·half-1, d [blocks]
    float16): max = the first value of largest |x| (with its sign), d = max / -half, id = 1 / d
    (0 when d = 0), q = min(2·half - 1, (int8)(x · id + half + 0.5)) in f32."""
    x = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, block)
    ax = np.abs(x)
    first = ax.argmax(axis=1)                      # the first of the largest |x|, as `amax < |v|` keeps
    top = x[np.arange(x.shape[0]), first]
    top = np.where(ax.max(axis=1) > 0, top, np.float32(0))   # all zero: max stays +0, d = -0
    d = top / np.float32(-half)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    v = (x * inv[:, None]) + np.float32(half + 0.5)   # two f32 roundings, as in C
    q = np.minimum(np.float32(2 * half - 1), np.trunc(v)).astype(np.uint8)   # (int8_t) truncates
    return q, d.astype(np.float16)


def q4_0_parts(a):
    """[..., cols] f32 (cols a multiple of 32) -> (q [blocks, 32] uint8 in 0..15, d [blocks]
    float16), block by block along each row, as ggml's quantize_row_q4_0_ref."""
    return _offset_levels(a, Q4_0_BLOCK, 8)


def q4_0_bytes(a):
    """[rows, cols] f32 -> Q4_0 blocks, row-major, 18 bytes per 32 values."""
    q, d = q4_0_parts(a)
    out = np.empty((q.shape[0], 2 + Q4_0_BLOCK // 2), dtype=np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def q4_0_round(a):
    """a through Q4_0 and back: (q - 8) * f32(d), in a's shape."""
    q, d = q4_0_parts(a)
    return ((q.astype(np.float32) - 8) * d.astype(np.float32)[:, None]).reshape(np.shape(a))


def q5_0_parts(a):
    """[..., cols] f32 (cols a multiple of 32) -> (q [blocks, 32] uint8 in 0..31, d [blocks]
    float16), block by block along each row, as ggml's quantize_row_q5_0_ref."""
    return _offset_levels(a, Q5_0_BLOCK, 16)


def q5_0_bytes(a):
    """[rows, cols] f32 -> Q5_0 blocks, row-major, 22 bytes per 32 values."""
    q, d = q5_0_parts(a)
    out = np.empty((q.shape[0], BLOCK[GGML_Q5_0][0]), dtype=np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    bits = ((q >> 4) & 1).astype(np.uint32) << np.arange(Q5_0_BLOCK, dtype=np.uint32)
    out[:, 2:6] = bits.sum(axis=1, dtype=np.uint32).astype("<u4").view(np.uint8).reshape(-1, 4)
    out[:, 6:] = (q[:, :16] & 0xF) | ((q[:, 16:] & 0xF) << 4)
    return out.tobytes()


def iq4_nl_parts(a):
    """[..., cols] f32 (cols a multiple of 32) -> (i [blocks, 32] uint8 in 0..15, d [blocks]
    float16) by the plain quantiser of the module docstring."""
    x = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, IQ4_NL_BLOCK)
    ax = np.abs(x)
    top = x[np.arange(x.shape[0]), ax.argmax(axis=1)]
    d = (top / np.float32(-127)).astype(np.float16)
    df = d.astype(np.float32)
    scaled = np.divide(x, df[:, None], out=np.zeros_like(x), where=df[:, None] != 0)
    levels = IQ4_NL_VALUES.astype(np.float32)
    i = np.abs(scaled[..., None] - levels).argmin(axis=-1).astype(np.uint8)   # the first on a tie
    return i, d


def iq4_nl_bytes(a):
    """[rows, cols] f32 -> IQ4_NL blocks, row-major, 18 bytes per 32 values."""
    i, d = iq4_nl_parts(a)
    out = np.empty((i.shape[0], BLOCK[GGML_IQ4_NL][0]), dtype=np.uint8)
    out[:, :2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = i[:, :16] | (i[:, 16:] << 4)
    return out.tobytes()


def make_qx_quants_rmse1(x, nmax):
    """ggml's make_qx_quants(n, nmax, x, L, rmse_type = 1, qw = NULL) on every row of x [m, n] f32
    at once: (scale [m] f32, L [m, n] int32 in 0..2·nmax-1). The sums run in f32 in C's order
    (element by element, no fused multiply-add); a compiler that contracts them into FMAs (GCC's
    default on an FMA target) can differ in a near tie of the scale search."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    m, n = x.shape
    ax = np.abs(x)
    amax = ax.max(axis=1)
    top = x[np.arange(m), ax.argmax(axis=1)]
    zero = amax < GROUP_MAX_EPS
    top = np.where(zero, np.float32(1), top)
    w = x * x
    wx = w * x

    def attempt(iscale):
        l = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1)   # nearest_int: ties to even
        sumlx = np.zeros(m, dtype=np.float32)
        suml2 = np.zeros(m, dtype=np.float32)
        for i in range(n):
            sumlx = sumlx + wx[:, i] * l[:, i]
            suml2 = suml2 + (w[:, i] * l[:, i]) * l[:, i]
        return l, sumlx, suml2

    L, sumlx, suml2 = attempt(np.float32(-nmax) / top)
    scale = np.where(suml2 != 0, sumlx / np.where(suml2 != 0, suml2, np.float32(1)), np.float32(0))
    best = scale * sumlx
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = -(np.float32(nmax) + np.float32(0.1) * np.float32(step)) / top
        l, slx, sl2 = attempt(iscale)
        better = (sl2 > 0) & (slx * slx > best * sl2)
        L = np.where(better[:, None], l, L)
        scale = np.where(better, slx / np.where(sl2 > 0, sl2, np.float32(1)), scale)
        best = np.where(better, scale * slx, best)
    L = np.where(zero[:, None], -nmax, L)          # all zero: L = 0 after the + nmax
    scale = np.where(zero, np.float32(0), scale)
    return scale.astype(np.float32), (L + nmax).astype(np.int32)


def q6_k_parts(a):
    """[..., cols] f32 (cols a multiple of 256) -> (L [blocks, 256] int32 in 0..63, scales
    [blocks, 16] int8, d [blocks] float16), as ggml's quantize_row_q6_K_ref."""
    x = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, QK_K)
    nb = x.shape[0]
    sub, L = make_qx_quants_rmse1(x.reshape(-1, 16), 32)
    sub, L = sub.reshape(nb, QK_K // 16), L.reshape(nb, QK_K)
    asub = np.abs(sub)
    max_abs = asub.max(axis=1)
    max_scale = sub[np.arange(nb), asub.argmax(axis=1)]
    zero = max_abs < GROUP_MAX_EPS
    iscale = np.float32(-128) / np.where(zero, np.float32(1), max_scale)
    d = (np.float32(1) / iscale).astype(np.float16)
    scales = np.minimum(127, np.rint(iscale[:, None] * sub)).astype(np.int8)
    dj = d.astype(np.float32)[:, None] * scales.astype(np.float32)            # [nb, 16]
    dj_e = np.repeat(dj, 16, axis=1)
    requant = np.clip(np.rint(x / np.where(dj_e != 0, dj_e, np.float32(1))), -32, 31).astype(np.int32) + 32
    L = np.where(dj_e != 0, requant, L)                                       # d·scale = 0 keeps L
    L = np.where(zero[:, None], 0, L)
    scales = np.where(zero[:, None], 0, scales).astype(np.int8)
    d = np.where(zero, np.float16(0), d)
    return L, scales, d


def q6_k_bytes(a):
    """[rows, cols] f32 -> Q6_K super-blocks, row-major, 210 bytes per 256 values."""
    L, scales, d = q6_k_parts(a)
    nb = L.shape[0]
    Lb = L.astype(np.uint8).reshape(nb, 2, 4, 32)   # [block, half of 128, quarter of 32, l]
    ql = np.empty((nb, 2, 2, 32), dtype=np.uint8)    # ql[64·half + 32·k + l]
    ql[:, :, 0] = (Lb[:, :, 0] & 0xF) | ((Lb[:, :, 2] & 0xF) << 4)
    ql[:, :, 1] = (Lb[:, :, 1] & 0xF) | ((Lb[:, :, 3] & 0xF) << 4)
    qh = ((Lb[:, :, 0] >> 4) | ((Lb[:, :, 1] >> 4) << 2) | ((Lb[:, :, 2] >> 4) << 4)
          | ((Lb[:, :, 3] >> 4) << 6)).astype(np.uint8)                       # [nb, 2, 32]
    out = np.empty((nb, BLOCK[GGML_Q6_K][0]), dtype=np.uint8)
    out[:, :128] = ql.reshape(nb, 128)
    out[:, 128:192] = qh.reshape(nb, 64)
    out[:, 192:208] = scales.view(np.uint8)
    out[:, 208:] = d.view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def q6_k_round(a):
    """a through Q6_K and back: f32(d) * scale * (q - 32) (dequantize_row_q6_K's order)."""
    L, scales, d = q6_k_parts(a)
    ds = d.astype(np.float32)[:, None] * scales.astype(np.float32)
    return (np.repeat(ds, 16, axis=1) * (L.astype(np.float32) - 32)).reshape(np.shape(a))


def qk_simple_bytes(a, bits):
    """[rows, cols] f32 -> Q4_K (bits 4) or Q5_K (bits 5) super-blocks by the plain quantiser of
    the module docstring."""
    qmax = (1 << bits) - 1
    x = np.asarray(a, dtype=np.float32).reshape(-1, 8, 32)        # super-blocks, sub-blocks, values
    nb = x.shape[0]
    lo = np.minimum(x.min(-1), 0.0)                                 # [nb, 8]
    scale = (x.max(-1) - lo) / qmax
    d = (scale.max(-1) / 63).astype(np.float16)
    dmin = ((-lo).max(-1) / 63).astype(np.float16)
    df, dminf = d.astype(np.float32), dmin.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(df[:, None] > 0, np.rint(scale / df[:, None]), 0).clip(0, 63).astype(np.uint8)
        m = np.where(dminf[:, None] > 0, np.rint(-lo / dminf[:, None]), 0).clip(0, 63).astype(np.uint8)
        step = df[:, None] * sc
        q = np.where(step[..., None] > 0,
                     np.rint((x + (dminf[:, None] * m)[..., None]) / step[..., None]), 0)
    q = q.clip(0, qmax).astype(np.uint8)                            # [nb, 8, 32]
    packed = np.zeros((nb, 12), dtype=np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    packed[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    packed[:, 8:12] = (sc[:, 4:8] & 0xF) | ((m[:, 4:8] & 0xF) << 4)
    low = q & 0xF
    qs = (low[:, 0::2] | (low[:, 1::2] << 4)).reshape(nb, 128)      # pairs of sub-blocks
    parts = [d.view(np.uint8).reshape(nb, 2), dmin.view(np.uint8).reshape(nb, 2), packed]
    if bits == 5:
        high = (q >> 4) & 1                                         # [nb, 8, 32]
        qh = np.zeros((nb, 32), dtype=np.uint8)
        for j in range(8):
            qh |= (high[:, j, :] << j).astype(np.uint8)
        parts.append(qh)
    parts.append(qs)
    return np.concatenate(parts, axis=1).tobytes()


def output_type(dtype, cols):
    """The ggml type of the output head (a tied model's token_embd) in a `dtype` file, as
    llama.cpp's llama-quantize chooses it: Q6_K for Q4_0 (Q8_0 when the row length is not a multiple
    of 256), the file's own type otherwise."""
    t = DTYPES[dtype]
    if t == GGML_Q4_0:
        return GGML_Q6_K if cols % QK_K == 0 else GGML_Q8_0
    return t


def encoded_size(shape, ggml_type):
    n = int(np.prod(shape))
    size, values = BLOCK[ggml_type]
    return n // values * size


def encode(a, ggml_type):
    if ggml_type == GGML_F32:
        return np.ascontiguousarray(a, dtype=np.float32).tobytes()
    if ggml_type == GGML_BF16:
        return bf16_bytes(a)
    if ggml_type == GGML_Q4_0:
        return q4_0_bytes(a)
    if ggml_type == GGML_Q6_K:
        return q6_k_bytes(a)
    if ggml_type == GGML_Q5_0:
        return q5_0_bytes(a)
    if ggml_type == GGML_IQ4_NL:
        return iq4_nl_bytes(a)
    if ggml_type in (GGML_Q4_K, GGML_Q5_K):
        return qk_simple_bytes(a, 4 if ggml_type == GGML_Q4_K else 5)
    return q8_0_bytes(a)


class Writer:
    def __init__(self, who="gguf", alignment=ALIGNMENT):
        self.who = who     # the calling script, for its error messages
        self.alignment = alignment
        self.kv = []       # encoded key/value pairs
        self.tensors = []  # (name, numpy shape, ggml type, array)
        if alignment != ALIGNMENT:
            self.add("general.alignment", T_UINT32, alignment)

    @staticmethod
    def _str(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def _value(self, vtype, value):
        """A value of type vtype: a number, bool or str; for T_ARRAY an (element type, values) pair."""
        if vtype == T_STRING:
            return self._str(value)
        if vtype == T_ARRAY:
            etype, values = value
            head = struct.pack("<IQ", etype, len(values))
            if etype in SCALAR_DTYPE:
                return head + np.asarray(values, dtype=SCALAR_DTYPE[etype]).tobytes()
            return head + b"".join(self._value(etype, v) for v in values)
        if vtype not in SCALAR_DTYPE:
            raise ValueError(vtype)
        return np.asarray(value, dtype=SCALAR_DTYPE[vtype]).tobytes()

    def add(self, key, vtype, value):
        self.kv.append(self._str(key) + struct.pack("<I", vtype) + self._value(vtype, value))

    def add_array(self, key, etype, values):
        self.add(key, T_ARRAY, (etype, values))

    def add_tensor(self, name, array, ggml_type):
        values = BLOCK[ggml_type][1]
        if array.shape[-1] % values:
            raise SystemExit(f"{self.who}: {name}: {TYPE_NAMES[ggml_type]} needs rows of a multiple of "
                             f"{values} values, got {array.shape[-1]}")
        self.tensors.append((name, tuple(array.shape), ggml_type, array))

    def add_encoded_tensor(self, name, shape, ggml_type, data):
        """A tensor whose bytes the caller encoded (`shape` numpy's order; tfmc's tests write
        Q4_K and Q5_K blocks of their own this way)."""
        if len(data) != encoded_size(shape, ggml_type):
            raise SystemExit(f"{self.who}: {name}: {len(data)} bytes, expected "
                             f"{encoded_size(shape, ggml_type)}")
        self.tensors.append((name, tuple(shape), ggml_type, bytes(data)))

    def write(self, path):
        pad = lambda n: (-n) % self.alignment
        infos, offset = [], 0
        for name, shape, ggml_type, _ in self.tensors:
            dims = list(reversed(shape))
            infos.append(self._str(name) + struct.pack("<I", len(dims))
                         + struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", ggml_type, offset))
            size = encoded_size(shape, ggml_type)
            offset += size + pad(size)
        head = (GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))
                + b"".join(self.kv) + b"".join(infos))
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(head + b"\0" * pad(len(head)))
            for _, shape, ggml_type, array in self.tensors:
                if isinstance(array, bytes):
                    f.write(array + b"\0" * pad(len(array)))
                    continue
                a = np.asarray(array, dtype=np.float32)
                rows = a.reshape(-1, shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
                # Q6_K's scale search holds ~30 temporaries of its chunk: a quarter of the others'.
                chunk = CHUNK_ELEMENTS // (4 if ggml_type == GGML_Q6_K else 1)
                step = max(1, chunk // rows.shape[1])
                for r in range(0, rows.shape[0], step):
                    f.write(encode(rows[r:r + step], ggml_type))
                size = encoded_size(shape, ggml_type)
                f.write(b"\0" * pad(size))
        os.replace(tmp, path)
