/**
 * GPT-OSS legacy graphs and MXFP4 checkpoints. A `torch.onnx.export` of GPT-OSS embeds the
 * experts as HF holds them in memory after dequantization (transformers
 * `integrations/mxfp4.py` `convert_moe_packed_tensors` + `models/gpt_oss/modeling_gpt_oss.py`
 * `GptOssExperts`): `<m>.experts.gate_up_proj` f32 `[E, H, 2I]` (gate on even columns, up on
 * odd ones) and `<m>.experts.down_proj` f32 `[E, I, H]`, plus the constant-folded biases. The
 * checkpoint has only `*_blocks` / `*_scales` bytes, so no stored tensor can match them.
 *
 * This module dequantizes the checkpoint's MXFP4 experts (prepare's own kernel) into those
 * in-memory tensors, in a scratch safetensors file the content resolver reads like any other
 * checkpoint file — one expert at a time (read by range, so memory stays one expert's worth),
 * and only when the legacy graph has an initializer of that size — and says where each lands in the prepared layout: `gate_up_proj` (and its bias)
 * is the interleave of prepared `moe_weights.gate` and `.up` (`_bias`), `down_proj` (bias) is
 * prepared `moe_weights.down` (`down_bias`) as it is.
 */
import path from 'node:path';
import type { Checkpoint } from '../../formats/safetensors';
import { readSafetensorsHeader, SafetensorsReader, SafetensorsWriter } from '../../formats/safetensors';
import { dequantMxfp4 } from '../../prepare/kernels';
import { transposeMatrix } from '../../prepare/transpose-kernels';
import { MXFP4_BLOCKS } from '../../prepare/transforms/mxfp4';
import { failpoint, scratchDir } from '../../paths';
import type { KeyTensor } from '../../resolve';
import type { PlannedOutputs, PreparedLoc } from './prepared-location';
import { moeWeightsPrefix } from '../../artifacts/prepared-keys';

/** Dequantized MXFP4 experts as resolvable tensors, and where their keys land when prepared. */
export interface Mxfp4Sources {
  tensors: KeyTensor[];
  /** Prepared locations of the in-memory keys and of the MXFP4 groups' source biases. */
  locations(plan: PlannedOutputs): Map<string, PreparedLoc>;
  /** For a dequantized key: the MXFP4 source tensors it was computed from (`[blocks, scales]`). */
  origin(key: string): string[] | undefined;
  /** Removes the scratch directory (only the one this module made). */
  close(): Promise<void>;
}

/** The MXFP4 expert modules of `ckpt` (`<m>` of `<m>.experts.gate_up_proj_blocks`). */
export function mxfp4Modules(keys: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const k of keys) {
    const m = MXFP4_BLOCKS.exec(k);
    if (m && m[2] === 'gate_up') out.add(m[1]!);
  }
  return [...out];
}

/**
 * Writes the dequantized `<m>.experts.{gate_up_proj,down_proj}` of every MXFP4 module whose
 * element count, or one expert's, some legacy initializer has (`wanted`; an unrolled expert
 * loop holds per-expert slices). Nothing is written when none does.
 */
export async function mxfp4Sources(ckpt: Checkpoint, wanted: ReadonlySet<number>): Promise<Mxfp4Sources> {
  const modules = mxfp4Modules(ckpt.keys());
  const jobs: { key: string; blocks: string; scales: string; E: number; R: number; G: number }[] = [];
  for (const m of modules) {
    for (const proj of ['gate_up_proj', 'down_proj']) {
      const blocks = ckpt.get(`${m}.experts.${proj}_blocks`);
      const scales = ckpt.get(`${m}.experts.${proj}_scales`);
      if (!blocks || !scales || blocks.shape.length !== 4) continue;
      const [E, R, G] = blocks.shape as [number, number, number];
      if (wanted.has(E * R * G * 32) || wanted.has(R * G * 32))
        jobs.push({ key: `${m}.experts.${proj}`, blocks: blocks.key, scales: scales.key, E, R, G });
    }
  }
  const locations = (plan: PlannedOutputs) => mxfp4Locations(modules, plan);
  const origins = new Map(jobs.map((j) => [j.key, [j.blocks, j.scales]]));
  const origin = (key: string) => origins.get(key);
  if (jobs.length === 0) return { tensors: [], locations, origin, close: async () => undefined };

  // in TMPDIR, removed by close(), on an error, or by the CLI's interrupt handler
  const scratch = scratchDir('weight-spec-mxfp4-');
  try {
    const file = path.join(scratch.dir, 'dequantized.safetensors');
    // HF's in-memory layout: the dequantized [E, R, G·32] transposed per expert → [E, G·32, R]
    const w = await SafetensorsWriter.open(
      file,
      jobs.map((j) => ({ key: j.key, dtype: 'F32' as const, shape: [j.E, j.G * 32, j.R] })),
    );
    try {
      for (const j of jobs) {
        // one expert at a time (blocks and scales may sit in different shards)
        const [b, sc] = [ckpt.get(j.blocks)!, ckpt.get(j.scales)!];
        const [rb, rs] = [await SafetensorsReader.open(b.file), await SafetensorsReader.open(sc.file)];
        try {
          const perBlocks = j.R * j.G * 16;
          const perScales = j.R * j.G;
          for (let e = 0; e < j.E; e++) {
            const blocks = await rb.read(b, { start: e * perBlocks, length: perBlocks });
            const scales = await rs.read(sc, { start: e * perScales, length: perScales });
            const deq = dequantMxfp4(blocks, scales, j.R, j.G);
            await w.writePart(j.key, transposeMatrix(new Uint8Array(deq.buffer), j.R, j.G * 32, 4));
          }
        } finally {
          await Promise.all([rb.close(), rs.close()]);
        }
      }
      await w.finish();
      await failpoint('export-mxfp4-dequantized');
    } catch (err) {
      await w.abort();
      throw err;
    }
    const header = await readSafetensorsHeader(file);
    const tensors = [...header.tensors.values()].map((t) => ({
      key: t.key,
      dtype: t.dtype,
      shape: t.shape,
      file,
      offset: t.dataOffset,
      byteLength: t.byteLength,
    }));
    return { tensors, locations, origin, close: scratch.remove };
  } catch (err) {
    await scratch.remove();
    throw err;
  }
}

/** Where the in-memory GPT-OSS expert keys (and the source biases) land in the prepared layout. */
function mxfp4Locations(modules: string[], plan: PlannedOutputs): Map<string, PreparedLoc> {
  const out = new Map<string, PreparedLoc>();
  const at = (key: string): PreparedLoc | undefined => {
    const t = plan.outputs.get(key);
    return t ? { key, ...t } : undefined;
  };
  for (const m of modules) {
    const p = moeWeightsPrefix(m);
    for (const suffix of ['', '_bias']) {
      const gate = at(`${p}.gate${suffix}`);
      const up = at(`${p}.up${suffix}`);
      if (gate && up) out.set(`${m}.experts.gate_up_proj${suffix}`, { ...gate, interleave: up });
      const down = at(`${p}.down${suffix}`);
      if (down) out.set(`${m}.experts.down_proj${suffix}`, down);
    }
  }
  return out;
}
