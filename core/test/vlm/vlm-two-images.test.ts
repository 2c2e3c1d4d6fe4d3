/**
 * Two images in one prompt for Qwen2.5-VL and Gemma 3 (fixtures qwen2_5_vl, gemma3_vlm), checked
 * against Hugging Face's rules transcribed here independently of core/src:
 *   - Qwen2.5-VL positions: `Qwen2_5_VLModel.get_rope_index` of HF transformers
 *     src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py (commit
 *     00b676f8f0489b88652a31d70751cc540dd06305), images only (second_per_grid_t = 0, so t_index is 0);
 *   - Gemma 3's attention mask: `create_causal_mask_mapping` + `token_type_ids_mask_function` of
 *     src/transformers/models/gemma3/modeling_gemma3.py (commit
 *     0018aa647bb13801f061e2d1027c326f531b59fb): image group ids = cumsum of "image token whose
 *     predecessor is not one" − 1; the causal (or sliding) mask OR "both image tokens of one group".
 *     The mask is read from the compiled language graph itself (its `Or` nodes made outputs).
 * Through `run --image a --image a` (and `--pixel-values` holding both: the same tokens): the
 * vision graph gives each image's reference features (the other image differs, so attention
 * leaking across images would show), the language graph puts the reference features on the
 * second image's span, and the generation gives the requested tokens.
 * Qwen2.5-VL: every logit row and the greedy tokens equal an independent numpy text model
 * (core/test/support/qwen2_5_vl_text_reference.py, itself checked against reference.json) fed HF's image
 * features and the transcribed positions. With the image and a 2× copy (grids 6×8 and 12×16, one
 * vision call each) the same holds on the features our vision graph gives the copy: no HF
 * reference exists here for that size, so only the language side and positions are checked there.
 * Gemma 3: the greedy tokens and every logit row outside the image interiors equal an independent
 * numpy text model (core/test/support/gemma3_text_reference.py, checked against every row of
 * reference.json) fed HF's image features.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeImage, processImage, processorConfig } from '../../src/run/vlm/image';
import { getRopeIndex } from '../../src/run/vlm/rope-index';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { PYTHON, haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { hfRopeIndex, probeLanguage, runPort, type PortInput } from '../../../test/support/vlm-references';
import { maxDiff, vlmCli, writePng } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-two-');
const hasNumpy = () => spawnSync(PYTHON, ['-c', 'import numpy'], { encoding: 'utf8' }).status === 0;

describe('Qwen2.5-VL get_rope_index with two images of their own grids', () => {
  it('equals the transcription of HF get_rope_index, which reproduces the fixture positions', () => {
    const fx = JSON.parse(readFileSync(path.join(fixturesDir(), 'qwen2_5_vl', 'reference.json'), 'utf8'));
    const c = { imageTokenId: 303, videoTokenId: 304, visionStartTokenId: 300, spatialMergeSize: 2 };
    const ref = { start: 300, image: 303 };
    // the transcription on the fixture's prompt gives HF's own positions (reference.json)
    const one = hfRopeIndex(fx.input_ids, fx.image_grid_thw, 2, ref);
    expect(one.pos).toEqual(fx.position_ids); // [3, len]: t, h, w rows
    expect(one.delta).toBe(fx.rope_deltas);
    // two images, grids 6×8 and 4×10 patches (12 and 10 tokens), text before, between and after
    const img = (n: number) => [300, ...new Array<number>(n).fill(303), 301];
    const ids = [245, 134, ...img(12), 17, 18, 19, ...img(10), 212, 222, 79];
    const grids: [number, number, number][] = [
      [1, 6, 8],
      [1, 4, 10],
    ];
    const want = hfRopeIndex(ids, grids, 2, ref);
    const got = getRopeIndex(ids, grids, c);
    expect(got.positions).toEqual(want.pos);
    expect(got.delta).toBe(want.delta);
    // by hand: text 0–2, image 1 at 3 + (0..2, 0..3) (max 6), "<end> 17 18 19 <start>" 7–11, image 2 from 12
    expect([0, 1, 2].map((r) => want.pos[r]![ids.indexOf(303, 16)])).toEqual([12, 12, 12]);
    expect([0, 1, 2].map((r) => want.pos[r]![ids.indexOf(303, 16) - 1])).toEqual([11, 11, 11]);
  });
});

/** Copies a fixture's model files into `<work>/model` and exports, prepares and compiles it. */
async function build(h: ReturnType<typeof vlmCli>, fx: string): Promise<void> {
  mkdirSync(path.join(h.work(), 'model'));
  for (const f of readdirSync(fx).filter((x) => !x.endsWith('.onnx') && x !== 'reference.json'))
    copyFileSync(path.join(fx, f), path.join(h.work(), 'model', f));
  await h.ok('export', '--config', 'model', '--out', 'out');
  await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
  await h.ok('compile', 'out');
}

describeFixtures('qwen2_5_vl: two copies of the fixture image in one prompt', () => {
  const fx = path.join(fixturesDir(), 'qwen2_5_vl');
  const ref = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8'));
  let work = '';
  const h = vlmCli(() => work);
  const ids: number[] = ref.input_ids;
  const s = ids.indexOf(300);
  const e = ids.indexOf(301);
  const two = [...ids.slice(0, e + 1), ...ids.slice(s, e + 1), ...ids.slice(e + 1)];
  const H = JSON.parse(readFileSync(path.join(fx, 'config.json'), 'utf8')).hidden_size as number;

  beforeAll(async () => {
    work = tmp();
    writePng(path.join(work, 'image.png'), ref.image);
    await build(h, fx);
  }, 60_000);

  it('the vision graph on [another image, the fixture image] (grid [2, 1, 6, 8]) and the language graph place the fixture features on the second span', async () => {
    // the other image is the fixture's pixel values negated: with two equal images, attention
    // leaking across images in the full-attention blocks would go unnoticed
    const pv = (ref.pixel_values as number[][]).flat();
    const n = ref.pixel_values.length as number;
    const [[t, gh, gw]] = ref.image_grid_thw as number[][];
    const out = await (
      await h.session('out/vision')
    ).run({
      pixel_values: new ort.Tensor('float32', Float32Array.from([...pv.map((x) => -x), ...pv]), [2 * n, pv.length / n]),
      image_grid_thw: new ort.Tensor('int64', new BigInt64Array(2 * t! * gh! * gw!), [2, t!, gh!, gw!]),
    });
    const v = out.vision_embeds!.data as Float32Array;
    const want = (ref.image_embeds as number[][]).flat();
    expect(v.length).toBe(2 * want.length);
    expect(maxDiff(v.subarray(want.length), want)).toBeLessThan(1e-4);
    expect(maxDiff(v.subarray(0, want.length), want)).toBeGreaterThan(1e-2); // a different image indeed
    // one prefill of the two-image prompt: the rows the graph picks for each image token
    const S = two.length;
    const { names, values } = await probeLanguage(
      work,
      'rows',
      {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(two.map(BigInt)), [1, S]),
        vision_embeds: new ort.Tensor('float32', v, [1, v.length / H, H]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from([0, 1, 2, 3].flatMap(() => two.map((_, k) => BigInt(k)))), [4, 1, S]),
        image_idx: new ort.Tensor('int64', new BigInt64Array(1), [1, 1]),
      },
      S,
    );
    expect(names).toHaveLength(1);
    const picked = values[names[0]!]!.data as Float32Array;
    const at = two.flatMap((x, k) => (x === 303 ? [k] : []));
    expect(at).toHaveLength((2 * want.length) / H);
    const span = (ks: number[]) => ks.flatMap((k) => Array.from(picked.subarray(k * H, (k + 1) * H)));
    expect(maxDiff(span(at.slice(0, at.length / 2)), v.subarray(0, want.length))).toBe(0);
    expect(maxDiff(span(at.slice(at.length / 2)), want)).toBeLessThan(1e-4);
  });

  const port = (name: string, inp: PortInput) => runPort(work, 'qwen2_5_vl_text_reference.py', fx, name, inp);

  it.runIf(hasNumpy())(
    'run --image twice gives the logits and greedy tokens of an independent numpy text model on HF features and HF positions',
    async () => {
      // the port reproduces the fixture's HF logits and generated_ids (single image) first
      const seq = [...ids, ...ref.generated_ids.slice(0, -1)];
      const one = port('one', { ids: seq, image_embeds: ref.image_embeds, positions: ref.position_ids_logits, delta: 0, generate: 0 });
      expect(maxDiff(one.logits.flat(), (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
      const grids = [ref.image_grid_thw[0], ref.image_grid_thw[0]] as number[][];
      const hf = hfRopeIndex(two, grids, 2, { start: 300, image: 303 });
      const want = port('two', {
        ids: two,
        image_embeds: [...ref.image_embeds, ...ref.image_embeds],
        positions: hf.pos,
        delta: hf.delta,
        generate: 5,
      });
      const args = ['run', 'out', '--image', 'image.png', '--image', 'image.png', '--input-ids', two.join(',')];
      const gen = await h.ok(...args, '--max-new-tokens', '5');
      expect(gen.stdout.trim()).toBe(want.generated.join(','));
      // --pixel-values with both images' rows and grids: the same tokens
      writeFileSync(
        path.join(work, 'pv2.json'),
        JSON.stringify({
          pixel_values: [...ref.pixel_values, ...ref.pixel_values],
          image_grid_thw: [...ref.image_grid_thw, ...ref.image_grid_thw],
        }),
      );
      const fromPv = await h.ok('run', 'out', '--pixel-values', 'pv2.json', '--input-ids', two.join(','), '--max-new-tokens', '5');
      expect(fromPv.stdout.trim()).toBe(want.generated.join(','));
      await h.ok(...args, '--dump-logits', 'logits.json');
      const got = JSON.parse(readFileSync(path.join(work, 'logits.json'), 'utf8')).logits as number[][];
      expect(got).toHaveLength(two.length);
      expect(maxDiff(got.flat(), want.logits.flat())).toBeLessThan(1e-4);
    },
    60_000,
  );
  it.runIf(hasNumpy())(
    'run --image with the image and a 2× copy (grids 6×8 and 12×16, two vision calls) gives the numpy text model on those features and HF positions',
    async () => {
      const img = ref.image as number[][][];
      writePng(
        path.join(work, 'big.png'),
        Array.from({ length: 2 * img.length }, (_, y) => Array.from({ length: 2 * img[0]!.length }, (_, x) => img[y >> 1]![x >> 1]!)),
      );
      const cfg = processorConfig(path.join(work, 'model'), { patch: 4, temporalPatch: 2, merge: 2 }, 'qwen2_5_vl');
      const big = processImage(decodeImage(path.join(work, 'big.png')), cfg);
      expect(big.grid).toEqual([1, 12, 16]);
      // the 2× copy's features come from our vision graph (no HF reference for that size here):
      // this checks the language side, the rope positions of two grids and the runner's per-size calls
      const [t, gh, gw] = big.grid;
      const out = await (
        await h.session('out/vision')
      ).run({
        pixel_values: new ort.Tensor('float32', big.pixelValues, [t * gh * gw, big.pixelValues.length / (t * gh * gw)]),
        image_grid_thw: new ort.Tensor('int64', new BigInt64Array(t * gh * gw), [1, t, gh, gw]),
      });
      const v = out.vision_embeds!.data as Float32Array;
      const feats2 = Array.from({ length: v.length / H }, (_, r) => Array.from(v.subarray(r * H, (r + 1) * H)));
      expect(feats2).toHaveLength((gh * gw) / 4);
      const ids2 = [...ids.slice(0, e + 1), 17, 300, ...new Array<number>(feats2.length).fill(303), 301, ...ids.slice(e + 1)];
      const grids = [ref.image_grid_thw[0], big.grid] as number[][];
      const hf = hfRopeIndex(ids2, grids, 2, { start: 300, image: 303 });
      const want = port('sizes', {
        ids: ids2,
        image_embeds: [...ref.image_embeds, ...feats2],
        positions: hf.pos,
        delta: hf.delta,
        generate: 5,
      });
      const args = ['run', 'out', '--image', 'image.png', '--image', 'big.png', '--input-ids', ids2.join(',')];
      const gen = await h.ok(...args, '--max-new-tokens', '5');
      expect(gen.stdout.trim()).toBe(want.generated.join(','));
      await h.ok(...args, '--dump-logits', 'logits-sizes.json');
      const got = JSON.parse(readFileSync(path.join(work, 'logits-sizes.json'), 'utf8')).logits as number[][];
      expect(got).toHaveLength(ids2.length);
      expect(maxDiff(got.flat(), want.logits.flat())).toBeLessThan(1e-4);
    },
    60_000,
  );
});

describeFixtures('gemma3_vlm: two copies of the fixture image in one prompt', () => {
  const fx = path.join(fixturesDir(), 'gemma3_vlm');
  const ref = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8'));
  let work = '';
  const h = vlmCli(() => work);
  const ids: number[] = ref.input_ids;
  const first = ids.indexOf(300);
  const last = ids.lastIndexOf(300);
  // "\n\n <boi> <image>×16 <eoi> \n\n" twice
  const span = ids.slice(first - 2, last + 3);
  const two = [...ids.slice(0, last + 3), ...span, ...ids.slice(last + 3)];
  const H = 64;
  const mm = 16;

  beforeAll(async () => {
    work = tmp();
    writePng(path.join(work, 'image.png'), ref.images[0] as number[][][]);
    await build(h, fx);
  }, 60_000);

  it('the vision graph on [another image, the fixture image] and the language graph place the fixture features on the second image', async () => {
    const pv = (ref.pixel_values as number[][][][]).flat(3);
    const out = await (
      await h.session('out/vision')
    ).run({ pixel_values: new ort.Tensor('float32', Float32Array.from([...pv.map((x) => -x), ...pv]), [2, 3, 32, 32]) });
    const v = out.vision_embeds!.data as Float32Array;
    const want = (ref.image_embeds as number[][][]).flat(2);
    expect(v.length).toBe(2 * want.length);
    expect(maxDiff(v.subarray(want.length), want)).toBeLessThan(1e-4);
    expect(maxDiff(v.subarray(0, want.length), want)).toBeGreaterThan(1e-2);
    const S = two.length;
    const { names, values } = await probeLanguage(
      work,
      'rows',
      {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(two.map(BigInt)), [1, S]),
        vision_embeds: new ort.Tensor('float32', v, [2, mm, H]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from(two.map((_, k) => BigInt(k))), [1, S]),
        image_idx: new ort.Tensor('int64', new BigInt64Array(1), [1, 1]),
      },
      S,
    );
    expect(names).toHaveLength(1);
    const picked = values[names[0]!]!.data as Float32Array;
    const at = two.flatMap((x, k) => (x === 300 ? [k] : []));
    expect(at).toHaveLength(2 * mm);
    const span = (ks: number[]) => ks.flatMap((k) => Array.from(picked.subarray(k * H, (k + 1) * H)));
    expect(maxDiff(span(at.slice(0, mm)), v.subarray(0, want.length))).toBe(0);
    expect(maxDiff(span(at.slice(mm)), want)).toBeLessThan(1e-4);
  });

  it.runIf(hasNumpy())(
    'run --image twice gives the greedy tokens and logits (outside image interiors) of an independent numpy text model on HF features',
    async () => {
      const feats = (ref.image_embeds as number[][][]).flat(1);
      // the port reproduces every row of the fixture's HF logits (image interiors too) and generated_ids first
      const seq = [...ids, ...ref.generated_ids.slice(0, -1)];
      const one = runPort(work, 'gemma3_text_reference.py', fx, 'one', { ids: seq, image_embeds: feats, generate: 0 });
      expect(maxDiff(one.logits.flat(), (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
      const want = runPort(work, 'gemma3_text_reference.py', fx, 'two', { ids: two, image_embeds: [...feats, ...feats], generate: 5 });
      const args = ['run', 'out', '--image', 'image.png', '--image', 'image.png', '--input-ids', two.join(',')];
      const gen = await h.ok(...args, '--max-new-tokens', '5');
      expect(gen.stdout.trim()).toBe(want.generated.join(','));
      // --pixel-values with both images [2, C, S, S]: the same tokens
      writeFileSync(path.join(work, 'pv2.json'), JSON.stringify({ pixel_values: [...ref.pixel_values, ...ref.pixel_values] }));
      const fromPv = await h.ok('run', 'out', '--pixel-values', 'pv2.json', '--input-ids', two.join(','), '--max-new-tokens', '5');
      expect(fromPv.stdout.trim()).toBe(want.generated.join(','));
      await h.ok(...args, '--dump-logits', 'logits.json');
      const got = JSON.parse(readFileSync(path.join(work, 'logits.json'), 'utf8')).logits as number[][];
      expect(got).toHaveLength(two.length);
      // rows of tokens inside an image (before its last token) come from a prefix prefill, not HF's
      // one bidirectional forward (see vlm-gemma3-cli.test.ts): every other row is compared
      const interior = (t: number) => two[t] === 300 && two[t + 1] === 300;
      const rows = got.map((_, t) => t).filter((t) => !interior(t));
      expect(rows.length).toBe(two.length - 2 * (mm - 1));
      expect(
        maxDiff(
          rows.flatMap((t) => got[t]!),
          rows.flatMap((t) => want.logits[t]!),
        ),
      ).toBeLessThan(1e-4);
    },
    60_000,
  );

  it.runIf(haveOnnxChecker())(
    "the language graph's masks for a two-image prefill equal HF's causal/sliding OR same-image rule",
    async () => {
      const S = two.length;
      const C = S + 3;
      const { names: outs, values: masks } = await probeLanguage(
        work,
        'masks',
        {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(two.map(BigInt)), [1, S]),
          vision_embeds: new ort.Tensor('float32', new Float32Array(2 * mm * H), [2, mm, H]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from(two.map((_, k) => BigInt(k))), [1, S]),
          image_idx: new ort.Tensor('int64', new BigInt64Array(1), [1, 1]),
        },
        C,
      );
      // HF: token_type_ids 1 at image tokens; image_group_ids = cumsum(new_image_start) − 1, −1 for text
      const isImage = two.map((t) => t === 300);
      let gid = -1;
      const group = isImage.map((x, k) => (x ? (k === 0 || !isImage[k - 1] ? ++gid : gid) : -1));
      expect(gid).toBe(1); // two groups
      const hf = (window: number | undefined) => {
        const m: boolean[] = [];
        for (let q = 0; q < S; q++)
          for (let kv = 0; kv < C; kv++) {
            const causal = kv <= q && (window === undefined || q - kv < window);
            const kvType = kv < S && isImage[kv]; // beyond the input: token type 0, group −1
            const kvGroup = kv < S ? group[kv] : -1;
            m.push(causal || (isImage[q]! && !!kvType && group[q] === kvGroup));
          }
        return m;
      };
      const sliding = JSON.parse(readFileSync(path.join(work, 'model', 'config.json'), 'utf8')).text_config.sliding_window as number;
      const expected = { full: hf(undefined), sliding: hf(sliding) };
      const seen = new Set<string>();
      for (const o of outs) {
        const t = masks[o]!;
        const data = Array.from(t.data as ArrayLike<number | boolean>, (x) => !!x);
        // [1, 1, S·groups, C] when GQA heads are tiled along the query axis: every copy must match
        const per = S * C;
        expect(data.length % per).toBe(0);
        const copies = Array.from({ length: data.length / per }, (_, k) => data.slice(k * per, (k + 1) * per));
        const which = Object.entries(expected).find(([, m]) => copies.every((cp) => cp.every((x, i) => x === m[i])))?.[0];
        expect(which, `mask ${o} (dims ${t.dims.join('×')}) equals neither HF's full nor sliding mask`).toBeDefined();
        seen.add(which!);
      }
      expect([...seen].sort()).toEqual(['full', 'sliding']);
    },
    60_000,
  );
});
