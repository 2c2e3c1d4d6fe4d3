// A small spec workspace made in code: two safetensors shards, a companion ONNX whose weight
// inputs match them, and a v5 spec — valid as written; tests edit it into faulty states.
import { copyFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ELEM, onnxBytes, tempDir, twoFileCheckpoint, type TestValue, type TwoFileSpec } from '../../core/test/support/check-helpers';
import { startInMemory, type TestClient } from './harness';

export type SpecJson = TwoFileSpec;
export type SpecInputJson = TwoFileSpec['inputs'][number];

/** Creates the workspace; `spec()` returns a fresh copy of the valid spec. */
export function makeWorkspace(): { dir: string; specFile: string; spec: () => SpecJson; text: (s: SpecJson) => string } {
  const dir = tempDir('ws-lsp-');
  // The checker tests' checkpoint, plus an F16 tensor the quick fixes offer for dtype errors.
  const valid = twoFileCheckpoint(dir, [{ key: 'model.embed_tokens.weight.f16', dtype: 'F16', shape: [16, 4] }]).spec;
  const inputs: TestValue[] = [
    { name: 'input_ids', elem: ELEM.INT64, dims: ['batch', 'seq'] },
    { name: 'model.embed_tokens.weight', elem: ELEM.FLOAT, dims: [16, 4] },
    { name: 'model.layers.0.self_attn.q_proj.weight', elem: ELEM.FLOAT, dims: [4, 4] },
    { name: 'model.layers.0.self_attn.k_proj.weight', elem: ELEM.FLOAT, dims: [2, 4] },
    { name: 'model.norm.weight', elem: ELEM.FLOAT, dims: [4] },
    { name: 'lm_head.weight', elem: ELEM.FLOAT, dims: [16, 4] },
  ];
  writeFileSync(path.join(dir, 'model.onnx'), onnxBytes(inputs, [{ name: 'logits', elem: ELEM.FLOAT, dims: ['batch', 'seq', 16] }]));
  const spec = (): SpecJson => structuredClone(valid);
  const specFile = path.join(dir, 'model.weight_spec.json');
  const text = (s: SpecJson) => JSON.stringify(s, null, 2);
  writeFileSync(specFile, text(spec()));
  return { dir, specFile, spec, text };
}

/** A server started in memory with a fresh {@link makeWorkspace} whose spec is open. */
export async function openWorkspace(): Promise<{ client: TestClient; ws: ReturnType<typeof makeWorkspace>; uri: string }> {
  const client = await startInMemory();
  const ws = makeWorkspace();
  const { uri } = await client.open(ws.specFile);
  return { client, ws, uri };
}

const FINGERPRINT = 'ab'.repeat(32);

/** A prepared directory `<dir>/<name>` holding a copy of ckpt/a.safetensors, a manifest and (optionally) the sentinel. */
export function preparedCopy(dir: string, name: string, opts: { sentinel: boolean; sourceSize?: number }): void {
  const p = path.join(dir, name);
  mkdirSync(p, { recursive: true });
  copyFileSync(path.join(dir, 'ckpt', 'a.safetensors'), path.join(p, 'a.safetensors'));
  const src = path.join(dir, 'ckpt', 'a.safetensors');
  // A manifest in prepare's format (core/src/prepare/manifest.ts).
  writeFileSync(
    path.join(p, '.checkpoint_prepared.json'),
    JSON.stringify({
      version: 1,
      tool: 'weight-spec',
      source: path.join(dir, 'ckpt'),
      target_dtype: 'float32',
      fingerprint: FINGERPRINT,
      moe_prefill_flavour: null,
      expert_parallel: null,
      source_files: [{ path: 'a.safetensors', size: opts.sourceSize ?? statSync(src).size, mtime_ms: statSync(src).mtimeMs }],
      transforms: [],
      tasks: [],
      output_files: [{ path: 'a.safetensors', size: statSync(path.join(p, 'a.safetensors')).size }],
      sidecars: [],
      created_at: new Date(0).toISOString(),
    }),
  );
  // The sentinel holds the manifest's fingerprint (core/src/prepare/manifest.ts).
  if (opts.sentinel) writeFileSync(path.join(p, '.checkpoint_prepared'), FINGERPRINT);
}
