/**
 * `prepare --spec`: lay the planner's outputs out exactly as a weight_spec.json names them.
 * The planner decides every transform from the checkpoint (dense copy, stacked gate/up/down,
 * fused split, MXFP4 dequant, FP8 dequant, expert-parallel pack); this module only renames its
 * output tensors to the spec's keys and re-shards them into the spec's files — one task per
 * file, the same recipes — so there is one pipeline, not two.
 *
 * A spec key is matched to a planner output by what it means, not by our default names:
 * our own `<module>.moe_weights.{gate,up,down}` and QEfficient's weight-free PR-head names
 * `<module>.experts.{gate_proj,up_proj,down_proj_t}` (quic/efficient-transformers,
 * `QEfficient/exporter/weight_free/checkpoint_transforms.py` `_LayerStacker.stack`: gate/up
 * `[E, H, I]`, `down_proj_t` `[E, I, H]` — the same orientation as ours), with QEfficient's
 * key lookup's `.mlp.` ↔ `.block_sparse_moe.` (Mixtral) and a leading `base_model.` dropped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError } from '../errors';
import { DTYPE_SIZE } from '../formats/dtype';
import { elementCount } from '../formats/safetensors';
import { specFileResolver } from '../artifacts/spec-files';
import { readSpec } from '../spec/parse';
import { peakOfTensor } from './estimate';
import type { OutputTensor, SourceTensor, Task } from './types';
import { moeWeightsKey, type MoeTensor } from '../artifacts/prepared-keys';

/** QEfficient PR-head stacked-expert names → our role names (biases keep their `_bias`). */
const QEFF_EXPERT = /^(.*)\.experts\.(gate_proj|up_proj|down_proj_t)(_bias)?$/;
const ROLE: Record<string, string> = { gate_proj: 'gate', up_proj: 'up', down_proj_t: 'down' };

/** The planner keys a spec key may mean, most literal first. */
export function plannerKeyCandidates(key: string): string[] {
  const base = key.startsWith('base_model.') ? [key, key.slice('base_model.'.length)] : [key];
  const named = base.flatMap((k) => {
    const m = QEFF_EXPERT.exec(k);
    return m ? [k, moeWeightsKey(m[1]!, `${ROLE[m[2]!]}${m[3] ?? ''}` as MoeTensor)] : [k];
  });
  const swapped = named.flatMap((k) => [
    k,
    ...(k.includes('.mlp.') ? [k.replace('.mlp.', '.block_sparse_moe.')] : []),
    ...(k.includes('.block_sparse_moe.') ? [k.replace('.block_sparse_moe.', '.mlp.')] : []),
  ]);
  return [...new Set(swapped)];
}

/** Source keys an output tensor's recipe reads (its scales included). */
function recipeSources(t: OutputTensor): string[] {
  const r = t.recipe;
  if (r.kind === 'convert') return [r.src, ...(r.scale ? [r.scale.key] : [])];
  if (r.kind === 'int4') {
    const m = r.module;
    return [m.qweight, m.qzeros, m.scales, ...(m.gIdx ? [m.gIdx] : [])];
  }
  return r.slots.flatMap((s) => {
    if (s.kind === 'mxfp4') return [s.blocks, s.scales];
    if (s.kind === 'columns') return [s.src];
    if (s.kind === 'lora') return s.src ? [s.src] : [];
    return [s.src, ...(s.scale ? [s.scale.key] : [])];
  });
}

/**
 * The prepared directory a spec's files live in: the link an export made, resolved; before the
 * folder exists (export links it only then) the folder its export report names; else the
 * files' folder as written.
 */
function specOutDir(specFile: string, dirs: Set<string>, firstFile: string): string {
  if (dirs.size !== 1)
    throw new FormatError(specFile, `files: the spec's files lie in ${dirs.size} folders; prepare --spec writes one prepared folder`);
  const dir = [...dirs][0]!;
  try {
    const st = fs.lstatSync(dir);
    return st.isSymbolicLink() ? path.resolve(path.dirname(dir), fs.readlinkSync(dir)) : dir;
  } catch {
    return specFileResolver(path.dirname(path.resolve(specFile))).file(firstFile).reportedDir ?? dir;
  }
}

/**
 * Re-lays `tasks` (the planner's) out as `specFile` names: returns one task per spec file
 * holding exactly the spec's keys, and the folder the spec's files are in (`out` overrides).
 * A key no planner output means is refused with its input's name.
 */
export async function specLayout(
  specFile: string,
  tasks: Task[],
  source: string,
  out: string | undefined,
): Promise<{ tasks: Task[]; outDir: string }> {
  const spec = await readSpec(specFile);
  const specDir = path.dirname(path.resolve(specFile));
  const byPlanner = new Map<string, { tensor: OutputTensor; task: Task; order: number }>();
  let order = 0;
  for (const task of tasks) for (const tensor of task.tensors) byPlanner.set(tensor.key, { tensor, task, order: order++ });

  const dirs = new Set<string>();
  // spec file index → spec key → planner key (a key bound by two inputs is written once)
  const wanted = new Map<number, Map<string, string>>();
  spec.inputs.forEach((input, i) => {
    const where = `inputs[${i}] (${input.name})`;
    const f = spec.files[input.location.file];
    if (!f) throw new FormatError(specFile, `${where}: location.file ${input.location.file} names no entry of files`);
    if (f.format !== 'safetensors' || !f.path.endsWith('.safetensors'))
      throw new FormatError(
        specFile,
        `${where}: files[${input.location.file}] is ${f.format} ${f.path}; prepare --spec writes safetensors`,
      );
    dirs.add(path.dirname(path.resolve(specDir, f.path)));
    const key = input.location.key;
    const hit = plannerKeyCandidates(key).find((k) => byPlanner.has(k));
    if (!hit)
      throw new FormatError(specFile, `${where}: key "${key}": no tensor of ${source} derives it (dense, stacked or split experts)`);
    const planned = byPlanner.get(hit)!.tensor;
    if (input.shape && input.shape.join() !== planned.shape.join())
      throw new FormatError(
        specFile,
        `${where}: shape ${JSON.stringify(input.shape)}, but ${key} prepares as ${JSON.stringify(planned.shape)}`,
      );
    const keys = wanted.get(input.location.file) ?? new Map<string, string>();
    wanted.set(input.location.file, keys);
    keys.set(key, hit);
  });
  const outDir = out ? path.resolve(out) : specOutDir(specFile, dirs, spec.files[0]?.path ?? '');

  const files = new Set<string>();
  const result: Task[] = [];
  for (const [fileIndex, keys] of [...wanted].sort((a, b) => a[0] - b[0])) {
    const file = path.basename(spec.files[fileIndex]!.path);
    if (files.has(file)) throw new FormatError(specFile, `files: two entries are named ${file}`);
    files.add(file);
    // planner order keeps a paired sibling (GPT-OSS gate/up) after the tensor that reads it
    const picked = [...keys].map(([specKey, plannerKey]) => ({ specKey, ...byPlanner.get(plannerKey)! })).sort((a, b) => a.order - b.order);
    const rename = new Map(picked.map((p) => [p.tensor.key, p.specKey]));
    const tensors: OutputTensor[] = picked.map(({ specKey, tensor }) => {
      const { pairedWith, ...rest } = tensor;
      const sib = pairedWith !== undefined ? rename.get(pairedWith) : undefined;
      return { ...rest, key: specKey, ...(sib !== undefined ? { pairedWith: sib } : {}) };
    });
    const sources: Record<string, SourceTensor> = Object.create(null) as Record<string, SourceTensor>;
    for (const p of picked) for (const k of recipeSources(p.tensor)) sources[k] = p.task.sources[k]!;
    const inputs = Object.keys(sources);
    const byKey = new Map(tensors.map((t) => [t.key, t]));
    const from = [...new Set(picked.map((p) => p.task))];
    result.push({
      id: `spec:${file}`,
      transform: [...new Set(from.map((t) => t.transform))].join('+'),
      params: { ...Object.fromEntries(Object.entries(from[0]!.params).filter(([k]) => k !== 'modules')), spec: true },
      inputs: inputs.map((key) => ({ key, stage: 'source' })),
      outputs: tensors.map((t) => ({ key: t.key, stage: 'final' })),
      sourceFiles: [...new Set(inputs.map((k) => sources[k]!.file))],
      file,
      peakBytes: Math.max(0, ...tensors.map((t) => peakOfTensor(t, sources, byKey))),
      outBytes: tensors.reduce((a, t) => a + elementCount(t.shape) * DTYPE_SIZE[t.dtype], 0),
      sources,
      tensors,
    });
  }
  return { tasks: result, outDir };
}
