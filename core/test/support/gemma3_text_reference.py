"""An independent numpy port (float64) of the Gemma 3 VLM text side of HF transformers
src/transformers/models/gemma3/modeling_gemma3.py (commit 0018aa647bb13801f061e2d1027c326f531b59fb):
embeddings scaled by sqrt(hidden), image rows put in their place unscaled (masked_scatter), decoder
layers (Gemma RMSNorm x * (1 + w), q/k norms, RoPE with rope_local_base_freq on sliding layers and
rope_theta / linear factor on full ones, query_pre_attn_scalar scaling, tanh-GELU gated MLP, post
norms), causal or sliding mask OR-ed with "both image tokens of one image group" (create_causal_mask_mapping
+ token_type_ids_mask_function), final norm, tied head, no soft cap. Used by core/test/vlm/vlm-two-images.test.ts.

argv: model_dir inputs.json out.json
inputs.json: {"ids": [...], "image_embeds": [[...] per image token], "generate": n}
out.json:    {"logits": [[...] per position], "generated": [...]}
"""
import json, math, os, sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_checkpoint import gqa_attention, gelu_tanh, greedy, linear, load_dir  # noqa: E402

model = sys.argv[1]
W = load_dir(model)
cfg = json.load(open(os.path.join(model, "config.json")))
tc = cfg["text_config"]
inp = json.load(open(sys.argv[2]))
P = "language_model.model"

def norm(x, w):  # Gemma3RMSNorm
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + tc["rms_norm_eps"]) * (1 + w)

lin = linear(W, bias=False)

def text(ids, image_embeds):
    H, nh, nkv, hd = tc["hidden_size"], tc["num_attention_heads"], tc["num_key_value_heads"], tc["head_dim"]
    ids = np.array(ids)
    S = len(ids)
    x = W[P + ".embed_tokens.weight"][ids] * math.sqrt(H)
    is_image = ids == cfg["image_token_index"]
    assert is_image.sum() == len(image_embeds)
    x[is_image] = image_embeds
    # image groups: a new group where an image token follows a non-image token; -1 for text
    start = is_image & ~np.concatenate([[False], is_image[:-1]])
    group = np.where(is_image, np.cumsum(start) - 1, -1)
    same = is_image[:, None] & is_image[None, :] & (group[:, None] == group[None, :])
    q_idx, kv_idx = np.arange(S)[:, None], np.arange(S)[None, :]
    causal = kv_idx <= q_idx
    masks = {"full_attention": causal | same, "sliding_attention": (causal & (q_idx - kv_idx < tc["sliding_window"])) | same}
    pos = np.arange(S, dtype=np.float64)

    def rope(theta, factor):
        inv = 1.0 / (theta ** (np.arange(0, hd, 2) / hd)) / factor
        emb = np.concatenate([pos[:, None] * inv] * 2, -1)
        return np.cos(emb)[:, None], np.sin(emb)[:, None]

    sc = tc.get("rope_scaling") or {}
    ropes = {
        "full_attention": rope(tc["rope_theta"], sc.get("factor", 1.0) if sc.get("rope_type") == "linear" else 1.0),
        "sliding_attention": rope(tc["rope_local_base_freq"], 1.0),
    }
    for i, kind in enumerate(tc["layer_types"]):
        L = f"{P}.layers.{i}"
        cos, sin = ropes[kind]
        y = norm(x, W[L + ".input_layernorm.weight"])
        q = norm(lin(y, L + ".self_attn.q_proj").reshape(S, nh, hd), W[L + ".self_attn.q_norm.weight"])
        k = norm(lin(y, L + ".self_attn.k_proj").reshape(S, nkv, hd), W[L + ".self_attn.k_norm.weight"])
        v = lin(y, L + ".self_attn.v_proj").reshape(S, nkv, hd)
        att = lin(gqa_attention(q, k, v, cos, sin, masks[kind], tc["query_pre_attn_scalar"] ** -0.5), L + ".self_attn.o_proj")
        x = x + norm(att, W[L + ".post_attention_layernorm.weight"])
        y = norm(x, W[L + ".pre_feedforward_layernorm.weight"])
        m = lin(gelu_tanh(lin(y, L + ".mlp.gate_proj")) * lin(y, L + ".mlp.up_proj"), L + ".mlp.down_proj")
        x = x + norm(m, W[L + ".post_feedforward_layernorm.weight"])
    x = norm(x, W[P + ".norm.weight"])
    return x @ W[P + ".embed_tokens.weight"].T

emb = np.array(inp["image_embeds"], dtype=np.float64)
ids = list(inp["ids"])
logits = text(ids, emb)

def step(nxt):
    ids.append(nxt)
    return text(ids, emb)

gen = greedy(logits, inp.get("generate", 0), step)
json.dump({"logits": logits.tolist(), "generated": gen}, open(sys.argv[3], "w"))
