"""An independent numpy port of HF transformers 4.57 Qwen3-VL(-MoE) (models/qwen3_vl_moe/
modeling_qwen3_vl_moe.py, models/qwen3_vl/modeling_qwen3_vl.py): vision tower, get_rope_index
and the text model, full-sequence forward in float64. Used by core/test/vlm/vlm-second-config.test.ts
to check the exported graphs on a configuration of its own.

argv: checkpoint.safetensors config.json inputs.json out.json
inputs.json: {"ids": [...], "pixel_values": [[...]], "image_grid_thw": [[t, h, w], ...], "generate": n}
out.json:    {"logits": [[...] per position], "generated": [...], "position_ids": [[...] x3], "image_embeds": [...]}
"""
import json, math, sys
import numpy as np
from numpy_checkpoint import gqa_attention, gelu_tanh, linear, load, rms_norm, rotate_half, silu, softmax  # beside this file (the script's folder is on sys.path)

W = load(sys.argv[1])
cfg = json.load(open(sys.argv[2]))
inp = json.load(open(sys.argv[3]))
vc, tc = cfg["vision_config"], cfg["text_config"]
erf = np.vectorize(math.erf)

def gelu(x):  # nn.GELU()
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))

def layer_norm(x, w, b, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b

lin = linear(W)

# ---- vision (Qwen3VLMoeVisionModel.forward, 4.57) ----
def vision(pv, grids):
    P = "model.visual"
    D, nh, m = vc["hidden_size"], vc["num_heads"], vc["spatial_merge_size"]
    hd = D // nh
    C, tp, p = vc.get("in_channels", 3), vc["temporal_patch_size"], vc["patch_size"]
    x = pv.reshape(-1, C * tp * p * p) @ W[P + ".patch_embed.proj.weight"].reshape(D, -1).T + W[P + ".patch_embed.proj.bias"]
    side = int(vc["num_position_embeddings"] ** 0.5)
    pos, rot, blocks = [], [], []
    dim = hd // 2
    inv = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
    for t, h, w in grids:
        hi = np.linspace(0, side - 1, h)
        wi = np.linspace(0, side - 1, w)
        hf, wf = hi.astype(int), wi.astype(int)
        hc, wc = np.minimum(hf + 1, side - 1), np.minimum(wf + 1, side - 1)
        dh, dw = hi - hf, wi - wf
        E = W[P + ".pos_embed.weight"]
        pe = (E[(hf[:, None] * side + wf[None])] * ((1 - dh)[:, None] * (1 - dw)[None])[..., None]
              + E[(hf[:, None] * side + wc[None])] * ((1 - dh)[:, None] * dw[None])[..., None]
              + E[(hc[:, None] * side + wf[None])] * (dh[:, None] * (1 - dw)[None])[..., None]
              + E[(hc[:, None] * side + wc[None])] * (dh[:, None] * dw[None])[..., None]).reshape(h * w, D)
        pe = np.tile(pe, (t, 1)).reshape(t, h // m, m, w // m, m, D).transpose(0, 1, 3, 2, 4, 5).reshape(-1, D)
        pos.append(pe)
        hp = np.repeat(np.arange(h)[:, None], w, 1).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3).flatten()
        wp = np.repeat(np.arange(w)[None], h, 0).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3).flatten()
        ids = np.tile(np.stack([hp, wp], -1), (t, 1))
        rot.append((ids[..., None] * inv).reshape(len(ids), -1))
        blocks += [h * w] * t
    x = x + np.concatenate(pos)
    r = np.concatenate(rot)
    emb = np.concatenate([r, r], -1)
    cos, sin = np.cos(emb)[:, None], np.sin(emb)[:, None]
    bounds = np.cumsum([0] + blocks)
    deep = []
    def merger(name, x, post):
        wide = D * m * m
        y = layer_norm(x.reshape(-1, wide), W[name + ".norm.weight"], W[name + ".norm.bias"]) if post else layer_norm(x, W[name + ".norm.weight"], W[name + ".norm.bias"]).reshape(-1, wide)
        return lin(gelu(lin(y, name + ".linear_fc1")), name + ".linear_fc2")
    for i in range(vc["depth"]):
        b = f"{P}.blocks.{i}"
        y = layer_norm(x, W[b + ".norm1.weight"], W[b + ".norm1.bias"])
        q, k, v = lin(y, b + ".attn.qkv").reshape(-1, 3, nh, hd).transpose(1, 0, 2, 3)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        out = np.zeros_like(q)
        for s, e in zip(bounds[:-1], bounds[1:]):
            a = softmax(np.einsum("qhd,khd->hqk", q[s:e], k[s:e]) * hd ** -0.5)
            out[s:e] = np.einsum("hqk,khd->qhd", a, v[s:e])
        x = x + lin(out.reshape(-1, D), b + ".attn.proj")
        y = layer_norm(x, W[b + ".norm2.weight"], W[b + ".norm2.bias"])
        x = x + lin(gelu_tanh(lin(y, b + ".mlp.linear_fc1")), b + ".mlp.linear_fc2")
        if i in vc["deepstack_visual_indexes"]:
            deep.append(merger(f"{P}.deepstack_merger_list.{vc['deepstack_visual_indexes'].index(i)}", x, True))
    return merger(P + ".merger", x, False), deep

# ---- get_rope_index (4.57), one unpadded sequence ----
def rope_index(ids, grids):
    img, vstart, m = cfg["image_token_id"], cfg["vision_start_token_id"], vc["spatial_merge_size"]
    n_img = sum(1 for i in range(len(ids) - 1) if ids[i] == vstart and ids[i + 1] == img)
    parts, st = [], 0
    for k in range(n_img):
        ed = ids.index(img, st)
        t, h, w = grids[k]
        gh, gw = h // m, w // m
        st_idx = parts[-1].max() + 1 if parts else 0
        parts.append(np.arange(ed - st)[None].repeat(3, 0) + st_idx)
        ti = np.arange(t)[:, None].repeat(gh * gw, 1).flatten()
        hi = np.arange(gh)[None, :, None].repeat(t, 0).repeat(gw, 2).flatten()
        wi = np.arange(gw)[None, None].repeat(t, 0).repeat(gh, 1).flatten()
        parts.append(np.stack([ti, hi, wi]) + (ed - st) + st_idx)
        st = ed + t * gh * gw
    if st < len(ids):
        st_idx = parts[-1].max() + 1 if parts else 0
        parts.append(np.arange(len(ids) - st)[None].repeat(3, 0) + st_idx)
    pos = np.concatenate(parts, 1)
    return pos, int(pos.max() + 1 - len(ids))

# ---- text model, full sequence ----
def text(ids, image_embeds, deep, pos):
    P = "model.language_model"
    H, nh, nkv = tc["hidden_size"], tc["num_attention_heads"], tc["num_key_value_heads"]
    hd = tc.get("head_dim", H // nh)
    eps = tc["rms_norm_eps"]
    ids = np.array(ids)
    x = W[P + ".embed_tokens.weight"][ids]
    mask = ids == cfg["image_token_id"]
    x[mask] = image_embeds[: mask.sum()]
    theta = tc["rope_theta"]
    inv = 1.0 / (theta ** (np.arange(0, hd, 2) / hd))
    freqs = pos[..., None] * inv  # [3, S, hd/2]
    f = freqs[0].copy()
    sec = tc["rope_scaling"]["mrope_section"]
    for d, off in ((1, 1), (2, 2)):
        idx = slice(off, sec[d] * 3, 3)
        f[:, idx] = freqs[d][:, idx]
    emb = np.concatenate([f, f], -1)
    cos, sin = np.cos(emb)[:, None], np.sin(emb)[:, None]
    S = len(ids)
    causal = np.tril(np.ones((S, S), bool))
    experts = tc.get("num_experts", 0)
    for i in range(tc["num_hidden_layers"]):
        L = f"{P}.layers.{i}"
        y = rms_norm(x, W[L + ".input_layernorm.weight"], eps)
        q = rms_norm(lin(y, L + ".self_attn.q_proj", False).reshape(S, nh, hd), W[L + ".self_attn.q_norm.weight"], eps)
        k = rms_norm(lin(y, L + ".self_attn.k_proj", False).reshape(S, nkv, hd), W[L + ".self_attn.k_norm.weight"], eps)
        v = lin(y, L + ".self_attn.v_proj", False).reshape(S, nkv, hd)
        x = x + lin(gqa_attention(q, k, v, cos, sin, causal, hd ** -0.5), L + ".self_attn.o_proj", False)
        y = rms_norm(x, W[L + ".post_attention_layernorm.weight"], eps)
        sparse = experts > 0 and i not in tc.get("mlp_only_layers", []) and (i + 1) % tc.get("decoder_sparse_step", 1) == 0
        if sparse:
            probs = softmax(y @ W[L + ".mlp.gate.weight"].T)
            top = np.argsort(-probs, -1, kind="stable")[:, : tc["num_experts_per_tok"]]
            out = np.zeros_like(y)
            for s in range(S):
                wts = probs[s, top[s]] / probs[s, top[s]].sum()
                for e, wt in zip(top[s], wts):
                    gu = y[s] @ W[L + ".mlp.experts.gate_up_proj"][e]
                    I = gu.shape[-1] // 2
                    out[s] += wt * ((silu(gu[:I]) * gu[I:]) @ W[L + ".mlp.experts.down_proj"][e])
        else:
            out = lin(silu(lin(y, L + ".mlp.gate_proj", False)) * lin(y, L + ".mlp.up_proj", False), L + ".mlp.down_proj", False)
        x = x + out
        if i < len(deep):
            x[mask] = x[mask] + deep[i][: mask.sum()]
    x = rms_norm(x, W[P + ".norm.weight"], eps)
    return x @ W["lm_head.weight"].T

pv = np.array(inp["pixel_values"], dtype=np.float64)
grids = [tuple(g) for g in inp["image_grid_thw"]]
embeds, deep = vision(pv, grids)
ids = list(inp["ids"])
pos, delta = rope_index(ids, grids)
logits = text(ids, embeds, deep, pos)
gen = []
seq = list(ids)
for _ in range(inp.get("generate", 0)):
    p, _ = rope_index(seq, grids)
    nxt = int(np.argmax(text(seq, embeds, deep, p)[-1]))
    gen.append(nxt)
    seq.append(nxt)
json.dump({"logits": logits.tolist(), "generated": gen, "position_ids": pos.tolist(), "delta": delta, "image_embeds": embeds.tolist()}, open(sys.argv[4], "w"))
