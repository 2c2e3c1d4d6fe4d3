/**
 * Where a prepared tensor came from, for hover: a key prepare computed from other source
 * tensors — GPT-OSS's MXFP4 experts (`transforms/mxfp4.ts`), FP8 weights and their scales
 * (check/quantization.ts) — is described by its source
 * tensors (dtype and shape, as the source checkpoint stores them) and the dequantized shape
 * the graph consumes. The facts come from prepare itself: the manifest of a prepared
 * directory (`.checkpoint_prepared.json`: each task's transform, inputs and outputs), or the
 * plan when the directory is not written yet.
 */
import path from 'node:path';
import { memoByStamp } from '../file-stamp';
import { readJsonTextSync } from '../paths';
import { readSafetensorsHeaderSync } from '../formats/safetensors';
import { MANIFEST_FILE, parsePreparedManifest, type PreparedManifest } from '../prepare';
import { describeFp8Origin } from './quantization';
import { MOE_WEIGHTS_KEY } from '../artifacts/prepared-keys';

/** One prepare task: what it read and wrote. */
export interface TaskFacts {
  transform: string;
  inputs: string[];
  outputs: string[];
}

/** A tensor's stored dtype and shape. */
export interface TensorFacts {
  dtype: string;
  shape: number[];
}

// An invalid manifest or header is the prepared-state check's business: here it is just no origin.
const manifestFile = memoByStamp((file) => parsePreparedManifest(JSON.parse(readJsonTextSync(file)), file), 64);
const headerOf = memoByStamp(readSafetensorsHeaderSync, 256);

function manifestOf(dir: string): PreparedManifest | undefined {
  return manifestFile(path.join(dir, MANIFEST_FILE));
}

/** What each MXFP4 output is, relative to the dequantized source (`[E, rows, G·32]`). */
function mxfp4Role(key: string): { from: 'gate_up_proj' | 'down_proj'; bias: boolean; what: string } | undefined {
  const m = MOE_WEIGHTS_KEY.exec(key);
  if (!m) return undefined;
  const bias = !!m[3];
  const what =
    m[2] === 'down'
      ? bias
        ? 'down_proj_bias as stored'
        : 'down_proj dequantized, each expert transposed to [in, out] = [I, H]'
      : `${m[2] === 'gate' ? 'even' : 'odd'} ${bias ? 'columns of gate_up_proj_bias' : 'rows of gate_up_proj dequantized (interleaved gate/up), each expert transposed to [in, out] = [H, I]'} (${m[2]})`;
  return { from: m[2] === 'down' ? 'down_proj' : 'gate_up_proj', bias, what };
}

/**
 * Hover lines for prepared `key` (stored as `info`) produced by `tasks`; `source(k)` gives a
 * source tensor's facts. Empty for keys prepare copies or stacks without a transform of note.
 */
export function describeOrigin(
  tasks: readonly TaskFacts[],
  key: string,
  info: TensorFacts,
  source: (k: string) => TensorFacts | undefined,
  sourceDir?: string,
): string[] {
  const fp8 = describeFp8Origin(tasks, key, info, source, sourceDir);
  if (fp8.length) return fp8;
  const task = tasks.find((t) => t.transform === 'mxfp4' && t.outputs.includes(key));
  const role = mxfp4Role(key);
  if (!task || !role) return [];
  const wanted = task.inputs.filter((k) =>
    role.bias ? k.endsWith(`.${role.from}_bias`) : k.endsWith(`.${role.from}_blocks`) || k.endsWith(`.${role.from}_scales`),
  );
  const lines = [`dequantized by \`weight-spec prepare\` from MXFP4 (GPT-OSS experts, HF \`convert_moe_packed_tensors\`): ${role.what}`];
  for (const k of wanted) {
    const t = source(k);
    lines.push(`- source \`${k}\`${t ? ` \`${t.dtype}\` [${t.shape.join(', ')}]` : ''}`);
  }
  lines.push(`dequantized shape \`[${info.shape.join(', ')}]\` (\`${info.dtype}\`), what the graph consumes`);
  return lines;
}

/** {@link describeOrigin} for a key of the prepared directory `dir`, from its manifest and the source headers. */
export function describePreparedOrigin(dir: string, key: string, info: TensorFacts): string[] {
  const m = manifestOf(dir);
  if (!m) return [];
  const shards = m.source_files.filter((f) => f.path.endsWith('.safetensors')).map((f) => path.resolve(m.source, f.path));
  return describeOrigin(
    m.tasks,
    key,
    info,
    (k) => {
      for (const f of shards) {
        const t = headerOf(f)?.tensors.get(k);
        if (t) return t;
      }
      return undefined;
    },
    m.source,
  );
}
