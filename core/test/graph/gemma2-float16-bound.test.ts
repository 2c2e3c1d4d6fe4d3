/**
 * Why gemma2's float16 tolerance is 8e-2 (test/support/fixtures.ts `float16Tolerance`): an
 * independent numpy forward of the gemma2 fixture, written from modeling_gemma2.py
 * (huggingface/transformers @ 006e86931247d7bacf94ad00ada1fb6baf11e94b) and rounded to
 * float16 where a float16 model holds values (projections, cache, residual stream, norm
 * outputs), already lies beyond 2e-2 of reference.json — while the same code in float64
 * reproduces it within 1e-4 (so the emulation itself is right). The shared check and the numpy
 * prelude (weights, config, reference, float16 rounding) are in test/support/float16-bound.ts.
 */
import { describeFloat16Bound } from '../../../test/support/float16-bound';

/** The forward, after float16-bound.ts's prelude (d, mode, W, c, ref, ids, R). */
const FORWARD = `
H, nh, nkv, hd, T = c['hidden_size'], c['num_attention_heads'], c['num_key_value_heads'], c['head_dim'], len(ids)
eps, W_, scal = c['rms_norm_eps'], c['sliding_window'], c['query_pre_attn_scalar'] ** -0.5
acap, fcap = c['attn_logit_softcapping'], c['final_logit_softcapping']
def rms(x, w): return R(x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * (1 + w))
def gelu(x): return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
inv = 1 / c['rope_theta'] ** (np.arange(0, hd, 2) / hd); f = np.arange(T)[:, None] * inv[None]; emb = np.concatenate([f, f], -1)
cos, sin = np.cos(emb)[:, None], np.sin(emb)[:, None]
def rope(x): return R(x * cos + np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1) * sin)
x = R(W['model.embed_tokens.weight'][ids] * R(np.array(np.sqrt(H))))
for l in range(c['num_hidden_layers']):
    p = 'model.layers.%d.' % l
    a = rms(x, W[p + 'input_layernorm.weight'])
    q = rope(R(a @ W[p + 'self_attn.q_proj.weight'].T).reshape(T, nh, hd))
    k = rope(R(a @ W[p + 'self_attn.k_proj.weight'].T).reshape(T, nkv, hd))
    v = R(a @ W[p + 'self_attn.v_proj.weight'].T).reshape(T, nkv, hd)
    out = np.zeros((T, nh, hd))
    keep = np.tril(np.ones((T, T)))
    if l % 2 == 0: keep = keep * (1 - np.tril(np.ones((T, T)), -W_))
    for j in range(nh):
        s = R(R(q[:, j] @ k[:, j // (nh // nkv)].T) * scal); s = acap * np.tanh(s / acap)
        s = np.where(keep > 0, s, -np.inf); pr = np.exp(s - s.max(-1, keepdims=True)); pr = R(pr / pr.sum(-1, keepdims=True))
        out[:, j] = R(pr @ v[:, j // (nh // nkv)])
    x = R(x + rms(R(out.reshape(T, -1) @ W[p + 'self_attn.o_proj.weight'].T), W[p + 'post_attention_layernorm.weight']))
    y = rms(x, W[p + 'pre_feedforward_layernorm.weight'])
    m = R(R(gelu(R(y @ W[p + 'mlp.gate_proj.weight'].T))) * R(y @ W[p + 'mlp.up_proj.weight'].T))
    x = R(x + rms(R(m @ W[p + 'mlp.down_proj.weight'].T), W[p + 'post_feedforward_layernorm.weight']))
lg = R(rms(x, W['model.norm.weight']) @ W['model.embed_tokens.weight'].T)
print(float(np.abs(fcap * np.tanh(lg / fcap) - np.array(ref['logits'])).max()))
`;

describeFloat16Bound('gemma2', FORWARD);
