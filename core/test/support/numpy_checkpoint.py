"""What the numpy reference ports in core/test share: a safetensors checkpoint folder read into
float64 arrays (BF16 widened exactly), and the small ops every HF text model here uses."""
import json, math, os, struct
import numpy as np

def load(path):
    """One .safetensors file as {key: float64 array}."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        if v["dtype"] == "BF16":
            raw = np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16
            out[k] = raw.view(np.float32).reshape(v["shape"]).astype(np.float64)
        else:
            assert v["dtype"] == "F32", v["dtype"]
            out[k] = np.frombuffer(data[a:b], dtype="<f4").reshape(v["shape"]).astype(np.float64)
    return out

def load_dir(model):
    """Every .safetensors file of a checkpoint folder, merged."""
    W = {}
    for f in sorted(os.listdir(model)):
        if f.endswith(".safetensors"):
            W.update(load(os.path.join(model, f)))
    return W

def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)

def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)

def silu(x):
    return x / (1 + np.exp(-x))

def gelu_tanh(x):  # gelu_pytorch_tanh
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

def rms_norm(x, w, eps):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w

def linear(W, bias=True):
    """lin(x, p) over the weights W: x @ W[p.weight]ᵀ, plus W[p.bias] when bias (per call too)."""
    def lin(x, p, bias=bias):
        y = x @ W[p + ".weight"].T
        return y + W[p + ".bias"] if bias else y
    return lin

def greedy(logits, n, step):
    """n greedy tokens after a prompt whose logits are `logits`: step(token) appends the token
    and returns the new sequence's logits (not called after the last token)."""
    gen = []
    nxt = int(np.argmax(logits[-1]))
    for k in range(n):
        gen.append(nxt)
        if k + 1 == n:
            break
        nxt = int(np.argmax(step(nxt)[-1]))
    return gen

def gqa_attention(q, k, v, cos, sin, mask, scale):
    """Rotary q [S, nh, hd] and k [S, nkv, hd], grouped-query softmax attention of v under mask
    (True: attend), scores times scale: the heads' outputs as [S, nh·hd]."""
    nh, nkv = q.shape[1], k.shape[1]
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    k, v = np.repeat(k, nh // nkv, 1), np.repeat(v, nh // nkv, 1)
    a = softmax(np.where(mask, np.einsum("qhd,khd->hqk", q, k) * scale, -np.inf))
    return np.einsum("hqk,khd->qhd", a, v).reshape(q.shape[0], -1)
