/**
 * Shared by the CCL and sampler tests: the CLI (in this process, test/support/cli.ts) on a fixture —
 * export --config (with the serving flags under test) → prepare → compile (ORT) — and an ONNX
 * Runtime session on the compiled model for feeding graphs by hand.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { readCompileRecord } from '../../src/compile';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { SUPPORTED_MODEL_TYPES } from '../../src/export/exporter';
import { cliInProcess } from '../../../test/support/cli';
import { builtTextFixture, fixturesDir, haveFixtures } from '../../../test/support/fixtures';
import type { Reference } from './compile-support';

/** Result of one CLI run. */
export interface CliRun {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; throws with its stderr when `expectOk` and it fails. */
export async function ws(cwd: string, args: string[], expectOk = true): Promise<CliRun> {
  const r = await cliInProcess(args, { cwd });
  const out = { status: r.code, stdout: r.stdout, stderr: r.stderr };
  if (expectOk && out.status !== 0) throw new Error(`weight-spec ${args.join(' ')} → exit ${out.status}: ${r.stderr.trim()}`);
  return out;
}

/** Every text fixture the graph builder knows (reference.json + a supported model_type, no vision tower). */
export function textFixtures(): string[] {
  if (!haveFixtures()) return [];
  return fs.readdirSync(fixturesDir()).filter((fam) => {
    const cfg = path.join(fixturesDir(), fam, 'config.json');
    if (!fs.existsSync(cfg) || !fs.existsSync(path.join(fixturesDir(), fam, 'reference.json'))) return false;
    if (!builtTextFixture(fam)) return false;
    const t = (JSON.parse(fs.readFileSync(cfg, 'utf8')) as { model_type?: string }).model_type ?? '';
    return (SUPPORTED_MODEL_TYPES as readonly string[]).includes(t) && !t.includes('_vl');
  });
}

/** The fixture's reference.json. */
export function reference(fam: string): Reference {
  return JSON.parse(fs.readFileSync(path.join(fixturesDir(), fam, 'reference.json'), 'utf8')) as Reference;
}

/** Prepares `fam` (float32) once per root; returns the prepared dir. */
export async function prepared(root: string, fam: string): Promise<string> {
  const dir = path.join(root, `${fam}-qeff-prepared-float32`);
  if (!fs.existsSync(path.join(dir, '.checkpoint_prepared')))
    await ws(root, ['prepare', '--checkpoint', path.join(fixturesDir(), fam), '--dtype', 'float32', '--out', dir]);
  return dir;
}

/** export --config `fam` with `flags` into `<root>/<name>`, then compile it against the prepared copy. */
export async function exportCompiled(root: string, fam: string, name: string, flags: string[]): Promise<string> {
  const out = path.join(root, name);
  await ws(root, ['export', '--config', path.join(fixturesDir(), fam), '--out', out, ...flags]);
  await ws(root, ['compile', out, '--prepared', await prepared(root, fam)]);
  return out;
}

/** `run --dump-logits` rows for `ids`. */
export async function dumpLogits(root: string, exportDir: string, ids: number[]): Promise<number[][]> {
  const file = path.join(root, `logits-${path.basename(exportDir)}-${ids.length}.json`);
  await ws(root, ['run', exportDir, '--input-ids', ids.join(','), '--dump-logits', file]);
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { logits: number[][] }).logits;
}

/** `run --max-new-tokens n` with extra flags; the tokens and stderr. */
export async function generate(
  root: string,
  exportDir: string,
  ids: number[],
  n: number,
  flags: string[] = [],
): Promise<{ tokens: number[]; stderr: string }> {
  const r = await ws(root, ['run', exportDir, '--input-ids', ids.join(','), '--max-new-tokens', String(n), ...flags]);
  return { tokens: r.stdout.trim().split(',').map(Number), stderr: r.stderr };
}

/** An ORT session on the latest compile of `exportDir`, with the graph's declared input dims. */
export async function session(exportDir: string): Promise<{ s: ort.InferenceSession; dims: Map<string, (number | string)[]> }> {
  const rec = readCompileRecord(exportDir);
  if (!rec?.artifacts.model) throw new Error(`${exportDir}: not compiled for ort`);
  const m = parseWireModel(fs.readFileSync(rec.artifacts.model), rec.artifacts.model);
  return { s: await ort.InferenceSession.create(rec.artifacts.model), dims: new Map(m.inputs.map((i) => [i.name, i.dims])) };
}

/** int64 tensor. */
export function i64(values: number[], dims: number[]): ort.Tensor {
  return new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);
}

/** float32 tensor filled with `v`. */
export function f32(v: number, dims: number[]): ort.Tensor {
  return new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(v), dims);
}

/** Zero KV caches `[batch, n_kv, ctx_len, head_dim]` for every past_* input (dims as the graph declares them). */
export function zeroCaches(dims: Map<string, (number | string)[]>, batch: number): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const [n, d] of dims)
    if (/^past_(key|value)\.\d+$/.test(n)) feeds[n] = f32(0, [batch, d[1] as number, d[2] as number, d[3] as number]);
  return feeds;
}

export { ort };
