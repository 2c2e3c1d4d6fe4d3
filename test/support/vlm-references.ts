/**
 * What core/test/vlm/vlm-two-images.test.ts checks the VLM runs against, independent of core/src:
 * a transcription of HF's Qwen2.5-VL get_rope_index (src/transformers/models/qwen2_5_vl/
 * modeling_qwen2_5_vl.py, commit 00b676f8f0489b88652a31d70751cc540dd06305), the numpy text
 * models in core/test/support/*_text_reference.py, and a probe that reads intermediate tensors (masks,
 * picked vision rows) of a compiled language graph.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';
import { REPO_ROOT } from './fixtures';
import { PYTHON } from './onnx-checker';

/** HF Qwen2.5-VL get_rope_index for one unpadded sequence of images (transcribed, see the header). */
export function hfRopeIndex(ids: number[], grids: number[][], merge: number, ids_: { start: number; image: number }) {
  const starts = ids.flatMap((t, i) => (t === ids_.start ? [i] : []));
  const imageNums = starts.filter((i) => ids[i + 1] === ids_.image).length;
  const list: number[][][] = []; // blocks of [3][len]
  const maxOf = (b: number[][]) => Math.max(...b.flat());
  let st = 0;
  for (let k = 0; k < imageNums; k++) {
    const ed = ids.indexOf(ids_.image, st);
    const [t, h, w] = grids[k]!;
    const [lt, lh, lw] = [t!, h! / merge, w! / merge];
    const textLen = ed - st;
    const stIdx = list.length ? maxOf(list[list.length - 1]!) + 1 : 0;
    list.push([0, 1, 2].map(() => Array.from({ length: textLen }, (_, j) => j + stIdx)));
    const tIdx: number[] = [];
    const hIdx: number[] = [];
    const wIdx: number[] = [];
    for (let a = 0; a < lt; a++)
      for (let b = 0; b < lh; b++)
        for (let d = 0; d < lw; d++) {
          tIdx.push(a * 0 * 2); // time_tensor = arange(t) · second_per_grid_t (0 for images) · tokens_per_second
          hIdx.push(b);
          wIdx.push(d);
        }
    list.push([tIdx, hIdx, wIdx].map((r) => r.map((x) => x + textLen + stIdx)));
    st = ed + lt * lh * lw;
  }
  if (st < ids.length) {
    const stIdx = list.length ? maxOf(list[list.length - 1]!) + 1 : 0;
    list.push([0, 1, 2].map(() => Array.from({ length: ids.length - st }, (_, j) => j + stIdx)));
  }
  const pos = [0, 1, 2].map((r) => list.flatMap((b) => b[r]!));
  return { pos, delta: Math.max(...pos.flat()) + 1 - ids.length };
}

/** What the numpy text models take: ids, the image rows in image-token order, positions (Qwen2.5-VL). */
export interface PortInput {
  ids: number[];
  image_embeds: number[][];
  positions?: number[][];
  delta?: number;
  generate: number;
}

/** Runs `core/test/<script>` (an independent numpy text model) on the checkpoint in `model`. */
export function runPort(
  work: string,
  script: string,
  model: string,
  name: string,
  inp: PortInput,
): { logits: number[][]; generated: number[] } {
  const file = path.join(work, `${name}.json`);
  writeFileSync(file, JSON.stringify(inp));
  const r = spawnSync(PYTHON, ['-B', path.join(REPO_ROOT, 'core', 'test', 'support', script), model, file, `${file}.out`], {
    encoding: 'utf8',
  });
  expect(r.stderr).toBe('');
  return JSON.parse(readFileSync(`${file}.out`, 'utf8')) as { logits: number[][]; generated: number[] };
}

/**
 * Runs one prefill of the compiled language graph of `<work>/out` with extra outputs: the `Or`
 * nodes (`what` "masks") or the Gather that picks vision_embeds rows (`what` "rows", [1, S, H]).
 * The probe copy lives beside the artifact (its weights are external, by relative path) and is
 * removed after. States are zeros of cache length `ctx`.
 */
export async function probeLanguage(
  work: string,
  what: 'masks' | 'rows',
  feeds: Record<string, ort.Tensor>,
  ctx: number,
): Promise<{ names: string[]; values: Record<string, ort.Tensor> }> {
  const compiled = JSON.parse(readFileSync(path.join(work, 'out', 'language', 'compile.json'), 'utf8')).artifacts.model as string;
  const probe = path.join(path.dirname(compiled), 'probe.onnx');
  const py = [
    'import onnx, sys, json',
    'm = onnx.load(sys.argv[1], load_external_data=False)',
    'made = {o: n for n in m.graph.node for o in n.output}',
    "if sys.argv[3] == 'masks': outs = [n.output[0] for n in m.graph.node if n.op_type == 'Or']",
    "else: outs = [n.output[0] for n in m.graph.node if n.op_type == 'Gather' and n.input[0] in made and 'vision_embeds' in made[n.input[0]].input]",
    "kind = onnx.TensorProto.BOOL if sys.argv[3] == 'masks' else onnx.TensorProto.FLOAT",
    'for o in outs: m.graph.output.append(onnx.helper.make_tensor_value_info(o, kind, None))',
    'onnx.save(m, sys.argv[2])',
    "states = {i.name: [d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim] for i in m.graph.input if i.name.startswith('past_')}",
    "print(json.dumps({'outs': outs, 'states': states}))",
  ].join('\n');
  const r = spawnSync(PYTHON, ['-c', py, compiled, probe, what], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  const { outs, states } = JSON.parse(r.stdout) as { outs: string[]; states: Record<string, (number | string)[]> };
  expect(outs.length).toBeGreaterThan(0);
  try {
    const sess = await ort.InferenceSession.create(probe);
    const all = { ...feeds };
    for (const [name, d] of Object.entries(states)) {
      const dims = d.map((x) => (x === 'ctx_len' ? ctx : typeof x === 'number' ? x : 1));
      all[name] = new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
    }
    const values = (await sess.run(all, outs)) as Record<string, ort.Tensor>;
    await sess.release();
    return { names: outs, values };
  } finally {
    rmSync(probe, { force: true });
  }
}
