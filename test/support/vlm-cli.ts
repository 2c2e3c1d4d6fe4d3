/**
 * What the VLM end-to-end CLI tests (core/test/vlm/vlm-cli, vlm-qwen2-5-cli, vlm-gemma3-cli) do
 * alike: run the CLI in this process in their work folder, open a compiled graph, write the
 * fixture's image as a PNG, and the checks every VLM family makes the same way (float16 and
 * continuous-batching exports give generated_ids, bad configs are refused with one line,
 * the legacy graph pair exports over the same prepared checkpoint, the real config exports,
 * ONNX's checker on every graph and compiled artifact).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { cliInProcess, type CliRun } from './cli';
import { configsDir, fixturesDir } from './fixtures';
import { expectOnnxValid, type OnnxCheck } from './onnx-checker';

const req = createRequire(__filename);

export { maxDiff } from './vlm-graphs';

/** The CLI in a test's work folder (`work()` is read at each call: it is made in beforeAll). */
export interface VlmCli {
  work: () => string;
  /** `weight-spec <args>` with the work folder as cwd. */
  cliRun: (...args: string[]) => Promise<CliRun>;
  /** The same, throwing with the command and its stderr unless it exits 0. */
  ok: (...args: string[]) => Promise<CliRun>;
  /** An ONNX Runtime session on the compiled artifact of `<work>/<dir>`. */
  session: (dir: string) => Promise<ort.InferenceSession>;
}

/** The harness for the work folder `work()`. */
export function vlmCli(work: () => string): VlmCli {
  const cliRun = (...args: string[]) => cliInProcess(args, { cwd: work() });
  const ok = async (...args: string[]) => {
    const r = await cliRun(...args);
    if (r.code !== 0) throw new Error(`weight-spec ${args.join(' ')} → ${r.code}: ${r.stderr}`);
    return r;
  };
  const session = (dir: string) =>
    ort.InferenceSession.create(JSON.parse(readFileSync(path.join(work(), dir, 'compile.json'), 'utf8')).artifacts.model);
  return { work, cliRun, ok, session };
}

/** A VLM fixture's CLI test: the fixture's folder and reference.json, the harness over its work folder. */
export interface VlmFixtureCli {
  fx: string;
  /** reference.json as parsed (its fields differ per family). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each test reads its own family's fields
  ref: any;
  h: VlmCli;
  /** Makes the work folder with `tmp()` (in beforeAll), copies the fixture's checkpoint (`files`) into `<work>/model`; returns it. */
  begin: (files?: string[]) => string;
}

/** {@link vlmCli} on `fixtures/<fixture>` (call it inside describeFixtures: it reads reference.json). */
export function vlmFixtureCli(fixture: string, tmp: () => string): VlmFixtureCli {
  const fx = path.join(fixturesDir(), fixture);
  const ref: unknown = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8'));
  let work = '';
  const h = vlmCli(() => work);
  const begin = (files?: string[]) => {
    work = tmp();
    copyFixtureModel(work, fx, files);
    return work;
  };
  return { fx, ref, h, begin };
}

/**
 * Copies the fixture's checkpoint (`files`, by default every file but its graphs and
 * reference.json) into `<work>/model`.
 */
export function copyFixtureModel(work: string, fx: string, files?: string[]): void {
  mkdirSync(path.join(work, 'model'));
  for (const f of files ?? readdirSync(fx).filter((x) => !x.endsWith('.onnx') && x !== 'reference.json'))
    copyFileSync(path.join(fx, f), path.join(work, 'model', f));
}

/** `export --config model --out out`, `prepare --dtype float32`, `compile out`; returns the compile run. */
export async function exportPrepareCompile(h: VlmCli): Promise<CliRun> {
  await h.ok('export', '--config', 'model', '--out', 'out');
  await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
  return h.ok('compile', 'out');
}

/** The reference's prompt and what it generates and scores. */
export interface VlmReference {
  input_ids: number[];
  generated_ids: number[];
  logits: number[][];
}

/** `run <out> <source…> --max-new-tokens 5` on the reference's prompt prints its generated_ids. */
export async function expectGeneratedIds(h: VlmCli, out: string, source: string[], ref: Omit<VlmReference, 'logits'>): Promise<void> {
  const gen = await h.ok('run', out, ...source, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5');
  expect(gen.stdout.trim()).toBe(ref.generated_ids.join(','));
}

/**
 * The logits `run out <source…> --dump-logits` writes for the prompt followed by all but the
 * last generated token: one row per reference row.
 */
export async function dumpedLogits(h: VlmCli, source: string[], ref: VlmReference): Promise<number[][]> {
  const all = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
  await h.ok('run', 'out', ...source, '--input-ids', all.join(','), '--dump-logits', 'logits.json');
  const got = JSON.parse(readFileSync(path.join(h.work(), 'logits.json'), 'utf8')).logits as number[][];
  expect(got).toHaveLength(ref.logits.length);
  return got;
}

/** A VLM export's two weight specs (`<dir>/vision`, `<dir>/language`), after checking they name one prepared checkpoint. */
export function vlmSpecs(dir: string): { v: SpecJson; l: SpecJson } {
  const read = (g: string) => JSON.parse(readFileSync(path.join(dir, g, 'weight_spec.json'), 'utf8')) as SpecJson;
  const v = read('vision');
  const l = read('language');
  expect(v.model_id).toBe(l.model_id);
  return { v, l };
}

/** The parts of weight_spec.json these tests read. */
export interface SpecJson {
  model_id: string;
  inputs: { name: string; location: { key: string } }[];
}

/** The keys a spec's inputs read. */
export const specKeys = (spec: SpecJson): string[] => spec.inputs.map((i) => i.location.key);

/** Writes `image` (rows of [r, g, b] pixels, 0–255) to `file` as an opaque RGBA PNG. */
export function writePng(file: string, image: number[][][]): void {
  const H = image.length;
  const W = image[0]!.length;
  const { PNG } = req('pngjs');
  const png = new PNG({ width: W, height: H });
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) {
      for (let c = 0; c < 3; c++) png.data[(y * W + x) * 4 + c] = image[y]![x]![c];
      png.data[(y * W + x) * 4 + 3] = 255;
    }
  writeFileSync(file, PNG.sync.write(png));
}

/**
 * The test that float16 graphs (prepare --dtype float16) and a continuous-batching language
 * graph (batch 2, cache `ctxLen`) of `<work>/model` give the reference's generated_ids from its
 * pixel values (`fx`/reference.json).
 */
export function itFloat16AndContinuousBatching(
  h: VlmCli,
  fx: string,
  ref: { input_ids: number[]; generated_ids: number[] },
  ctxLen: number,
): void {
  it('float16 graphs (prepare --dtype float16) and a continuous-batching language graph also give generated_ids', async () => {
    await h.ok('export', '--config', 'model', '--out', 'out16', '--dtype', 'float16');
    await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float16');
    await h.ok('compile', 'out16');
    await h.ok('export', '--config', 'model', '--out', 'out-cb', '--continuous-batching', '--batch-size', '2', '--ctx-len', String(ctxLen));
    await h.ok('compile', 'out-cb');
    for (const out of ['out16', 'out-cb']) await expectGeneratedIds(h, out, ['--pixel-values', path.join(fx, 'reference.json')], ref);
  }, 60_000);
}

/**
 * Each case's config.json, written to `<work>/<name>/`, is refused by `export --config` with
 * exit 1 and one line matching its pattern, and nothing is written.
 */
export async function expectConfigRefusals(h: VlmCli, cases: [string, Record<string, unknown>, RegExp][]): Promise<void> {
  for (const [name, c, re] of cases) {
    mkdirSync(path.join(h.work(), name));
    writeFileSync(path.join(h.work(), name, 'config.json'), JSON.stringify(c));
    const r = await h.cliRun('export', '--config', name, '--out', `${name}-out`);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(re);
    expect(existsSync(path.join(h.work(), `${name}-out`))).toBe(false);
  }
}

/**
 * `export --onnx` of the fixture's vision.legacy.onnx and decoder.legacy.onnx over `<work>/model`
 * into legacy-vision / legacy-decoder: both specs name the prepared checkpoint out/vision's
 * does; both are compiled.
 */
export async function exportLegacyPair(h: VlmCli, fx: string): Promise<void> {
  for (const g of ['vision', 'decoder'])
    await h.ok('export', '--onnx', path.join(fx, `${g}.legacy.onnx`), '--checkpoint', 'model', '--out', `legacy-${g}`);
  const spec = (g: string) => JSON.parse(readFileSync(path.join(h.work(), g, 'weight_spec.json'), 'utf8'));
  expect(spec('legacy-vision').model_id).toBe(spec('legacy-decoder').model_id);
  expect(spec('legacy-vision').model_id).toBe(spec('out/vision').model_id);
  for (const g of ['legacy-vision', 'legacy-decoder']) await h.ok('compile', g);
}

/**
 * `export --config` of the real config `configs/<configFile>` (as `<work>/<name>/config.json`)
 * into `<work>/out`: exit 0 with nothing on stderr. Returns the run.
 */
export async function exportRealConfig(work: string, configFile: string, name: string): Promise<CliRun> {
  const model = path.join(work, name);
  mkdirSync(model);
  copyFileSync(path.join(configsDir(), configFile), path.join(model, 'config.json'));
  const r = await cliInProcess(['export', '--config', model, '--out', path.join(work, 'out')]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return r;
}

/** ONNX's checker on `<work>/<dir>/model.onnx` and the compiled artifact of each dir, graphs first. */
export function expectGraphsAndArtifactsValid(work: string, dirs: string[]): OnnxCheck[] {
  const graphs = dirs.map((g) => path.join(work, g, 'model.onnx'));
  const compiled = dirs.map((g) => JSON.parse(readFileSync(path.join(work, g, 'compile.json'), 'utf8')).artifacts.model as string);
  return expectOnnxValid([...graphs, ...compiled]);
}
