"""What the numpy reference ports in core/test share: a safetensors checkpoint folder read into
float64 arrays (BF16 widened exactly), and the small ops every HF text model here uses."""
import json, os, struct
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
