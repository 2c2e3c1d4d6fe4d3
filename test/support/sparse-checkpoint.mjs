// A full-size checkpoint without its bytes: real safetensors headers (a Qwen3-MoE-like key
// layout with the published Qwen3-30B-A3B sizes) over sparse files, so a 60 GB, 20,000-tensor
// checkpoint costs a few MB of disk. Used by the viewer tests and `npm run bench`; plain .mjs
// so both the TypeScript tests and the bench scripts import it.
import fs from 'node:fs';
import path from 'node:path';

/** Qwen3-30B-A3B's sizes (../shared/configs/qwen3-30b-a3b.json). */
export const QWEN3_30B = { layers: 48, experts: 128, hidden: 2048, moeInter: 768, heads: 32, kvHeads: 4, headDim: 128, vocab: 151936 };

/** The tensors (key, dtype, shape) of a Qwen3-MoE checkpoint with `o.layers` layers. */
export function qwen3MoeTensors(o = {}) {
  const c = { ...QWEN3_30B, ...o };
  const t = [{ key: 'model.embed_tokens.weight', shape: [c.vocab, c.hidden] }];
  for (let l = 0; l < c.layers; l++) {
    const p = `model.layers.${l}`;
    t.push(
      { key: `${p}.input_layernorm.weight`, shape: [c.hidden] },
      { key: `${p}.self_attn.q_proj.weight`, shape: [c.heads * c.headDim, c.hidden] },
      { key: `${p}.self_attn.k_proj.weight`, shape: [c.kvHeads * c.headDim, c.hidden] },
      { key: `${p}.self_attn.v_proj.weight`, shape: [c.kvHeads * c.headDim, c.hidden] },
      { key: `${p}.self_attn.o_proj.weight`, shape: [c.hidden, c.heads * c.headDim] },
      { key: `${p}.self_attn.q_norm.weight`, shape: [c.headDim] },
      { key: `${p}.self_attn.k_norm.weight`, shape: [c.headDim] },
      { key: `${p}.post_attention_layernorm.weight`, shape: [c.hidden] },
      { key: `${p}.mlp.gate.weight`, shape: [c.experts, c.hidden] },
    );
    for (let e = 0; e < c.experts; e++) {
      t.push(
        { key: `${p}.mlp.experts.${e}.gate_proj.weight`, shape: [c.moeInter, c.hidden] },
        { key: `${p}.mlp.experts.${e}.up_proj.weight`, shape: [c.moeInter, c.hidden] },
        { key: `${p}.mlp.experts.${e}.down_proj.weight`, shape: [c.hidden, c.moeInter] },
      );
    }
  }
  t.push({ key: 'model.norm.weight', shape: [c.hidden] }, { key: 'lm_head.weight', shape: [c.vocab, c.hidden] });
  return t.map((x) => ({ ...x, dtype: 'BF16' }));
}

/** Bytes per element of the dtypes a sparse checkpoint may declare (BF16 when unlisted). */
const DTYPE_BYTES = { BF16: 2, F16: 2, F32: 4, F8_E4M3: 1, U8: 1 };

/**
 * Writes `tensors` as `shards` safetensors files (model-0000i-of-0000n.safetensors, sparse:
 * header, then a hole up to the data's end) plus model.safetensors.index.json into `dir`.
 * Returns the shard paths and the total data bytes.
 */
export function writeSparseCheckpoint(dir, tensors, shards = 16) {
  fs.mkdirSync(dir, { recursive: true });
  const per = Math.ceil(tensors.length / shards);
  const files = [];
  const weightMap = {};
  let total = 0;
  for (let s = 0; s < shards; s++) {
    const part = tensors.slice(s * per, (s + 1) * per);
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    const header = {};
    let off = 0;
    for (const t of part) {
      const len = t.shape.reduce((a, b) => a * b, 1) * (DTYPE_BYTES[t.dtype] ?? 2);
      header[t.key] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + len] };
      weightMap[t.key] = name;
      off += len;
    }
    let h = Buffer.from(JSON.stringify(header));
    h = Buffer.concat([h, Buffer.alloc((8 - (h.length % 8)) % 8, 0x20)]);
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(h.length));
    const file = path.join(dir, name);
    fs.writeFileSync(file, Buffer.concat([len, h]));
    fs.truncateSync(file, 8 + h.length + off);
    files.push(file);
    total += off;
  }
  fs.writeFileSync(
    path.join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }),
  );
  return { files, totalBytes: total };
}
