"""An independent numpy port (float64) of the Qwen2.5-VL text side of HF transformers
src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py (commit
00b676f8f0489b88652a31d70751cc540dd06305): image rows replace the image-token embeddings
(masked_scatter), Qwen2 decoder layers (RMSNorm, q/k/v with bias, GQA, SiLU-gated MLP) with
multimodal RoPE split the HF way (apply_multimodal_rotary_pos_emb: cos/sin split by
mrope_section * 2, chunk i from row i % 3), final norm, lm_head. Used by
core/test/vlm/vlm-two-images.test.ts; positions come from the test's get_rope_index transcription.

argv: model_dir inputs.json out.json
inputs.json: {"ids": [...], "image_embeds": [[...] per image token], "positions": [[...] x3], "delta": d, "generate": n}
out.json:    {"logits": [[...] per position], "generated": [...]}
"""
import json, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_checkpoint import gqa_attention, greedy, linear, load_dir, rms_norm, silu  # noqa: E402

model = sys.argv[1]
W = load_dir(model)
cfg = json.load(open(os.path.join(model, "config.json")))
inp = json.load(open(sys.argv[2]))

lin = linear(W)

def text(ids, image_embeds, pos):
    H, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = H // nh
    eps = cfg["rms_norm_eps"]
    ids = np.array(ids)
    x = W["model.embed_tokens.weight"][ids]
    mask = ids == cfg["image_token_id"]
    assert mask.sum() == len(image_embeds), (mask.sum(), len(image_embeds))
    x[mask] = image_embeds
    inv = 1.0 / (cfg["rope_theta"] ** (np.arange(0, hd, 2) / hd))
    freqs = np.asarray(pos, dtype=np.float64)[..., None] * inv  # [3, S, hd/2]
    emb = np.concatenate([freqs, freqs], -1)  # [3, S, hd]
    sec = cfg["rope_scaling"]["mrope_section"] * 2
    bounds = np.cumsum([0] + sec)
    pick = lambda t: np.concatenate([t[i % 3][:, bounds[i] : bounds[i + 1]] for i in range(len(sec))], -1)
    cos, sin = pick(np.cos(emb))[:, None], pick(np.sin(emb))[:, None]  # [S, 1, hd]
    S = len(ids)
    causal = np.tril(np.ones((S, S), bool))
    for i in range(cfg["num_hidden_layers"]):
        L = f"model.layers.{i}"
        y = rms_norm(x, W[L + ".input_layernorm.weight"], eps)
        q = lin(y, L + ".self_attn.q_proj").reshape(S, nh, hd)
        k = lin(y, L + ".self_attn.k_proj").reshape(S, nkv, hd)
        v = lin(y, L + ".self_attn.v_proj").reshape(S, nkv, hd)
        x = x + lin(gqa_attention(q, k, v, cos, sin, causal, hd ** -0.5), L + ".self_attn.o_proj", False)
        y = rms_norm(x, W[L + ".post_attention_layernorm.weight"], eps)
        x = x + lin(silu(lin(y, L + ".mlp.gate_proj", False)) * lin(y, L + ".mlp.up_proj", False), L + ".mlp.down_proj", False)
    x = rms_norm(x, W["model.norm.weight"], eps)
    return x @ W["lm_head.weight"].T

emb = np.array(inp["image_embeds"], dtype=np.float64)
ids = list(inp["ids"])
pos = [list(r) for r in inp["positions"]]
logits = text(ids, emb, pos)

def step(nxt):
    global pos
    # a generated (text) token at cache position p gets p + rope delta on all three rows
    p = len(ids) + inp["delta"]
    ids.append(nxt)
    pos = [r + [p] for r in pos]
    return text(ids, emb, pos)

gen = greedy(logits, inp.get("generate", 0), step)
json.dump({"logits": logits.tolist(), "generated": gen}, open(sys.argv[3], "w"))
