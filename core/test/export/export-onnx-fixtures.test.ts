/**
 * `export --onnx` end to end on the fixtures' real `torch.onnx.export` files, through the
 * CLI (in this process): export → prepare float32 → compile (ORT) → run --dump-logits, judged by the
 * fixtures' reference logits (computed by PyTorch, not by us).
 */
import { readdirSync, readFileSync, statSync, symlinkSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixtureBuilt, fixturesDir, LEGACY_ONNX_FOLDERS } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmpDir = tempDirs('ws-');

/** Runs the CLI in this process (test/support/cli.ts); the stdout of a successful call. */
async function ok(args: string[]): Promise<string> {
  const r = await cliInProcess(args);
  if (r.code !== 0) throw new Error(`weight-spec ${args.join(' ')} → ${r.code}\n${r.stderr}`);
  return r.stdout;
}

/**
 * The fixture folders are read-only and prepare writes beside the checkpoint by default,
 * so each family is mirrored by symlinks into a scratch folder (symlinked shards are read
 * through, as in a Hugging Face cache snapshot).
 */
function mirror(family: string, root: string): string {
  const dir = path.join(root, family);
  mkdirSync(dir, { recursive: true });
  const src = path.join(fixturesDir(), family);
  for (const f of readdirSync(src)) symlinkSync(path.join(src, f), path.join(dir, f));
  return dir;
}

interface Reference {
  input_ids: number[];
  generated_ids: number[];
  logits: number[][];
}

/** Every fixture legacy graph whose `export --onnx` path is built (test/support/fixtures.ts PENDING_FIXTURES). */
const ONNX_FAMILIES = LEGACY_ONNX_FOLDERS.filter((f) => fixtureBuilt(f, 'onnx'));

describeFixtures('export --onnx on the fixtures (export → prepare → compile → run)', () => {
  const root = tmpDir('ws-export-onnx-');
  it.each(ONNX_FAMILIES)('%s reproduces the reference logits', async (family) => {
    const ckpt = mirror(family, root);
    const out = path.join(root, `${family}-export`);
    await ok(['export', '--onnx', path.join(ckpt, 'legacy.onnx'), '--checkpoint', ckpt, '--out', out]);
    const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));

    // Every folded Linear weight resolved (by content, transposed); nothing weight-like embedded.
    const unresolved: { name: string }[] = report.unresolved;
    expect(unresolved.filter((u) => u.name.startsWith('onnx::MatMul_'))).toEqual([]);
    const folded = report.inputs.filter((i: { initializer: string }) => i.initializer.startsWith('onnx::MatMul_'));
    expect(folded.length).toBeGreaterThan(0);
    for (const i of folded) expect(i.strategy).toBe('content-transposed');

    // The weight-free graph is a small fraction of the legacy file.
    const legacyBytes = statSync(path.join(ckpt, 'legacy.onnx')).size;
    expect(statSync(path.join(out, 'model.onnx')).size).toBeLessThanOrEqual(0.1 * legacyBytes);

    await ok(['prepare', '--checkpoint', ckpt, '--dtype', 'float32']);
    await ok(['compile', out]);
    const ref: Reference = JSON.parse(readFileSync(path.join(fixturesDir(), family, 'reference.json'), 'utf8'));
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const dump = path.join(root, `${family}-logits.json`);
    await ok(['run', out, '--input-ids', ids.join(','), '--dump-logits', dump]);
    const got: number[][] = JSON.parse(readFileSync(dump, 'utf8')).logits;
    expect(got.length).toBe(ref.logits.length);
    let maxDiff = 0;
    for (let t = 0; t < ref.logits.length; t++) {
      expect(got[t]!.length).toBe(ref.logits[t]!.length);
      for (let v = 0; v < ref.logits[t]!.length; v++) maxDiff = Math.max(maxDiff, Math.abs(got[t]![v]! - ref.logits[t]![v]!));
    }
    expect(maxDiff).toBeLessThanOrEqual(1e-4);

    // Greedy decoding from the prompt reproduces the reference continuation.
    const gen = await ok(['run', out, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', String(ref.generated_ids.length)]);
    expect(gen).toContain(ref.generated_ids.join(','));
  });

  it('gpt2 resolves keys without the transformer. prefix and its tied head', () => {
    const report = JSON.parse(readFileSync(path.join(root, 'gpt2-export', 'export-report.json'), 'utf8'));
    const keys = new Set(report.inputs.map((i: { key: string }) => i.key));
    expect(keys.has('wte.weight')).toBe(true);
    expect([...keys].some((k) => String(k).startsWith('transformer.'))).toBe(false);
    // The head is the embedding: no lm_head key exists, yet nothing stayed embedded.
    expect(keys.has('lm_head.weight')).toBe(false);
    const wteUses = report.inputs.filter((i: { key: string }) => i.key === 'wte.weight');
    expect(wteUses.length).toBe(2);
  });

  it('gemma2: every initializer resolves, each (1 + w) norm folded by torch by content (affine +1)', () => {
    const report = JSON.parse(readFileSync(path.join(root, 'gemma2-export', 'export-report.json'), 'utf8'));
    expect(report.unresolved).toEqual([]);
    const norms = report.inputs.filter((i: { key: string }) => /layernorm\.weight$|^model\.norm\.weight$/.test(i.key));
    // 3 layers × 4 norms + the final norm, each stored as 1 + w
    expect(new Set(norms.map((i: { key: string }) => i.key)).size).toBe(13);
    for (const i of norms) expect([i.strategy, i.affine]).toEqual(['content-affine', { add: 1 }]);
  });

  it('codegen: every initializer resolves, the fused qkv_proj (mp_num = 4) and the biased head included', () => {
    const report = JSON.parse(readFileSync(path.join(root, 'codegen-export', 'export-report.json'), 'utf8'));
    expect(report.unresolved).toEqual([]);
    const keys = new Set(report.inputs.map((i: { key: string }) => i.key));
    for (const k of ['transformer.h.0.attn.qkv_proj.weight', 'transformer.h.1.attn.qkv_proj.weight', 'lm_head.weight', 'lm_head.bias'])
      expect(keys.has(k), k).toBe(true);
  });

  it('qwen2 resolves its tied head with no lm_head.weight in the checkpoint', () => {
    const report = JSON.parse(readFileSync(path.join(root, 'qwen2-export', 'export-report.json'), 'utf8'));
    const emb = report.inputs.filter((i: { key: string }) => i.key === 'model.embed_tokens.weight');
    expect(emb.length).toBe(2);
    expect(emb.some((i: { transposed: boolean }) => i.transposed)).toBe(true);
  });
});
