/**
 * What the VLM end-to-end CLI tests (core/test/vlm/vlm-*-cli.test.ts) do alike — one place, so
 * that a family's test file keeps only what is its own (fixture, flags, reference fields, its
 * assertions): run the CLI in this process in their work folder, open a compiled graph, write the
 * fixture's image as a PNG, and the checks every VLM family makes the same way (float16 and
 * continuous-batching exports give generated_ids, bad configs are refused with one line,
 * the legacy graph pair exports over the same prepared checkpoint, the real config exports,
 * ONNX's checker on every graph and compiled artifact).
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess, type CliRun } from './cli';
import { configsDir, fixturesDir } from './fixtures';
import { expectOnnxValid, haveOnnxChecker, type OnnxCheck } from './onnx-checker';
import { wordLevelTokenizer, writeTokenizer } from './tokenizers';
import { maxDiff } from './vlm-graphs';

const req = createRequire(__filename);

export { maxDiff };

/** `<work>/out/vlm.json` (the VLM manifest), parsed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read a few fields of it
export const vlmManifest = (work: string): any => JSON.parse(readFileSync(path.join(work, 'out', 'vlm.json'), 'utf8'));

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

/**
 * {@link exportRealConfig} into a fresh `work`, whose stdout must match the family's one-line
 * `summary` (layers, tokens per image…, read off the config by hand); returns the manifest.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read a few fields of it
export async function exportRealVlm(work: string, configFile: string, name: string, summary: RegExp): Promise<any> {
  const r = await exportRealConfig(work, configFile, name);
  expect(r.stdout).toMatch(summary);
  return vlmManifest(work);
}

/** ONNX's checker on `<work>/<dir>/model.onnx` and the compiled artifact of each dir, graphs first. */
export function expectGraphsAndArtifactsValid(work: string, dirs: string[]): OnnxCheck[] {
  const graphs = dirs.map((g) => path.join(work, g, 'model.onnx'));
  const compiled = dirs.map((g) => JSON.parse(readFileSync(path.join(work, g, 'compile.json'), 'utf8')).artifacts.model as string);
  return expectOnnxValid([...graphs, ...compiled]);
}

/**
 * A VLM fixture's CLI suite after its beforeAll (`<work>/out` exported, prepared as float32 and
 * compiled): the steps and checks every family makes alike, bound to its harness, fixture and
 * reference, so that a family's test file names only what is its own.
 */
export interface VlmSuite extends Omit<VlmFixtureCli, 'begin'> {
  /** The work folder (made in beforeAll: read it inside tests). */
  work: () => string;
  /** The fixture's config.json, parsed afresh (each caller spreads its own variants over it). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each family's config has its own fields
  config: () => any;
  /** `<work>/out/vlm.json` (the VLM manifest), parsed. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read a few fields of it
  manifest: () => any;
  /** `<work>/out/<graph>/export-report.json`, parsed. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read a few fields of it
  report: (graph: string) => any;
  /** The two specs of `<work>/out` ({@link vlmSpecs}). */
  specs: () => { v: SpecJson; l: SpecJson };
  /** The language graph's first inputs are QEfficient's dual-graph decoder interface (the LLaVA wrapper's). */
  expectLlavaLanguageInputs: () => void;
  /** `logits` (all rows, flat) are within 1e-4 of reference.json's. */
  expectReferenceLogits: (logits: ArrayLike<number>) => void;
  /** The prompt followed by all but the last generated token: the sequence the reference's logit rows score. */
  scoredIds: () => number[];
  /**
   * Greedy decoding over `logits` (rows of `vocab`, one per scored id) gives generated_ids: the
   * legacy decoder graph, run once over the whole sequence, must choose what the reference chose.
   */
  expectGreedyIds: (logits: Float32Array, vocab?: number) => void;
  /** `run … --print-ids` printed generated_ids on its second line (the first is the text). */
  expectPrintedIds: (r: CliRun) => void;
  /**
   * Writes a WordLevel tokenizer over the fixture's 320 ids (`special`: id → its special token)
   * with `template` as chat template into `<work>/tok` (the fixtures ship no tokenizer).
   */
  writeWordTokenizer: (special: Record<number, string>, template: string) => void;
  /** {@link exportLegacyPair} of the fixture. */
  exportLegacyPair: () => Promise<void>;
  /**
   * The test that each of `cases(config.json)` (a name, a config, the pattern of its one-line
   * error) is refused by `export --config` writing nothing ({@link expectConfigRefusals}).
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each family's config has its own fields
  itRefusesConfigs: (cases: (cfg: any) => [string, Record<string, unknown>, RegExp][]) => void;
  /**
   * For each of {@link imageSources}: `run --max-new-tokens 5` gives generated_ids, and the
   * dumped logits pass `compare` (by default: every row within 1e-4 of the reference's). `what`
   * ends the test's title (a family that compares only some rows says which).
   */
  itRunsReference: (what?: string, compare?: (got: number[][]) => void) => void;
  /** {@link itFloat16AndContinuousBatching} with a continuous-batching cache of `ctxLen`. */
  itFloat16AndContinuousBatching: (ctxLen: number) => void;
  /**
   * The suite's last test (ONNX's check_model with full_check may write inferred shapes back
   * into a file): the checker passes on out/vision, out/language, the legacy pair and their
   * compiled artifacts.
   */
  itChecksGraphs: () => void;
}

/**
 * Registers the beforeAll every VLM CLI test starts with: copy the fixture's checkpoint into
 * `<work>/model`, write the reference's image (`image(ref)`) as `<work>/image.png` (so that `run
 * --image` goes through the processor port), then export → prepare → compile `<work>/out`.
 * Call inside describeFixtures (it reads reference.json).
 */
export function vlmCliSuite(fixture: string, tmp: () => string, image: (ref: VlmFixtureCli['ref']) => number[][][]): VlmSuite {
  const { fx, ref, h, begin } = vlmFixtureCli(fixture, tmp);
  beforeAll(async () => {
    const work = begin();
    writePng(path.join(work, 'image.png'), image(ref));
    await exportPrepareCompile(h);
  }, 120_000);
  const work = h.work;
  const readJson = (...parts: string[]) => JSON.parse(readFileSync(path.join(...parts), 'utf8'));
  const report = (graph: string) => readJson(work(), 'out', graph, 'export-report.json');
  const expectReferenceLogits = (logits: ArrayLike<number>) =>
    expect(maxDiff(logits, (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
  const scoredIds = (): number[] => [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
  return {
    fx,
    ref,
    h,
    work,
    config: () => readJson(fx, 'config.json'),
    manifest: () => vlmManifest(work()),
    report,
    specs: () => vlmSpecs(path.join(work(), 'out')),
    expectLlavaLanguageInputs: () =>
      expect(report('language').graph.inputs.slice(0, 4)).toEqual(['input_ids', 'vision_embeds', 'position_ids', 'image_idx']),
    expectReferenceLogits,
    scoredIds,
    expectGreedyIds: (logits, vocab = 320) => {
      const argmax = (r: number) => {
        const x = logits.subarray(r * vocab, (r + 1) * vocab);
        return x.indexOf(Math.max(...x));
      };
      // one row per scored id: the rows from the prompt's last token on are the generated ones
      expect(logits.length / vocab).toBe(scoredIds().length);
      const start = ref.input_ids.length - 1;
      expect(Array.from({ length: ref.generated_ids.length }, (_, k) => argmax(start + k))).toEqual(ref.generated_ids);
    },
    expectPrintedIds: (r) => expect(r.stdout.trim().split('\n')[1]).toBe(ref.generated_ids.join(',')),
    writeWordTokenizer: (special, template) => {
      // not beside the checkpoint, where it would change the prepared checkpoint's fingerprint: --tokenizer names it
      mkdirSync(path.join(work(), 'tok'));
      writeTokenizer(path.join(work(), 'tok'), wordLevelTokenizer(320, special), { chat_template: template });
    },
    exportLegacyPair: () => exportLegacyPair(h, fx),
    itRefusesConfigs: (cases) =>
      it('refuses what the graphs do not implement with one line naming the field, writing nothing', () =>
        expectConfigRefusals(h, cases(readJson(fx, 'config.json')))),
    itRunsReference: (what = 'is within 1e-4 on every row', compare) => {
      const check = compare ?? ((got: number[][]) => expectReferenceLogits(got.flat()));
      for (const [name, source] of imageSources(fx))
        it(`run ${name}: --max-new-tokens 5 gives generated_ids; --dump-logits ${what}`, async () => {
          await expectGeneratedIds(h, 'out', source(), ref);
          check(await dumpedLogits(h, source(), ref));
        });
    },
    itFloat16AndContinuousBatching: (ctxLen) => itFloat16AndContinuousBatching(h, fx, ref, ctxLen),
    itChecksGraphs: () =>
      it.runIf(haveOnnxChecker())("every graph and compiled artifact passes ONNX's checker", () => {
        expectGraphsAndArtifactsValid(work(), ['out/vision', 'out/language', 'legacy-vision', 'legacy-decoder']);
      }),
  };
}

/**
 * The two ways `run` takes the reference's image: its pixel values (reference.json) and the
 * image file through the processor port. Both must reproduce the same reference.
 */
export function imageSources(fx: string): [string, () => string[]][] {
  return [
    ['--pixel-values', () => ['--pixel-values', path.join(fx, 'reference.json')]],
    ['--image', () => ['--image', 'image.png']],
  ];
}
