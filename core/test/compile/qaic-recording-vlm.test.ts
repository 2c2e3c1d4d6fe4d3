/**
 * qaic-compile parity for the two graphs of a VLM export (issue 30 item 1, issue 33's
 * "QEfficient's interface"): a recording `qaic-compile` (a shell script saving its argv and the
 * files it is handed, one folder per graph) stands in for the compiler; what it received, and
 * the `hashed_compile_params.json` beside each QPC, are compared with what QEfficient's rules
 * produce — transcribed to Python in test/support/qeff-qaic-rules.ts from quic/efficient-transformers, reading the model's
 * sizes from the fixture's own config.json:
 *  - `QEfficient/transformers/models/modeling_auto.py` (commit 00074466158ecd8d7fd64c370ab8821214d8c540)
 *    `QEFFAutoModelForImageTextToText` (dual QPC) `compile`: vision `_compile(specializations=
 *    specs["vision"], specialization_module_name="Vision", convert_to_fp16=True,
 *    mxfp6_matmul=constants.VISION_MXFP6_MATMUL, aic_num_cores, custom_io=custom_io_vision,
 *    **compiler_options_vision)` with node_precision_info False; custom_io_vision = pixel_values +
 *    each vision output; language `_compile(retained_state=True, …, mxfp6_matmul, aic_num_cores,
 *    custom_io=custom_io_lang)`, custom_io_lang from `_add_retained_state_custom_io` (input, then
 *    the `_RetainedState` output, fp16 for vision_embeds / deepstack_features, else the KV dtype);
 *  - `qwen3_vl_moe/modeling_qwen3_vl_moe.py` (commit 02876f45360353d417c5a57eabf83bd6b274fef3),
 *    `qwen2_5_vl/modeling_qwen2_5_vl.py`, `gemma3/modeling_gemma3.py` (main
 *    ebf55e8159c8b87bff6d8028541b824244b16c81: Qwen2.5-VL's Vision entry has no `time`, its
 *    image_grid_thw fixing dim 1 at 1; Gemma 3's language entries name `vision_size`, #1029's
 *    rename of `mm_tokens_per_image`): `get_specializations`, `get_output_names(kv_offload=True)`;
 *  - `smart_resize`: QwenLM/Qwen3-VL `qwen-vl-utils/src/qwen_vl_utils/vision_process.py` (commit
 *    004d5e0a0d4514ce8945356ae8c969f4dc0080dc), as QEfficient's Qwen2.5-VL copy; Qwen3-VL's factor
 *    `IMAGE_FACTOR_QWEN_3` and token bounds `IMAGE_MIN/MAX_TOKEN_NUM` are taken as 32, 4 and
 *    16384 (qwen-vl-utils' values; QEfficient's constants.py holding them is not in the index);
 *  - `llava/modeling_llava.py`, `llava_next/modeling_llava_next.py` (main ebf55e8159c8b87bff6d8028541b824244b16c81)
 *    `get_specializations`; LLaVA-NeXT's num_patches / vision_size from HF's select_best_resolution,
 *    image_size_to_num_patches and LlavaNextProcessor._get_number_of_features for the image size
 *    compiled for (QEfficient fixes Granite Vision's 10 and 5239; see qaic-vlm-specs-llava.ts);
 *  - `mistral3/modeling_mistral3.py` (main ebf55e8159c8b87bff6d8028541b824244b16c81) `get_specializations`
 *    (our graph's image_height / image_width / image_tokens / vision_batch_size added: see
 *    qaic-vlm-specs-mistral3.ts);
 *  - `internvl/modeling_internvl.py` (main ebf55e8159c8b87bff6d8028541b824244b16c81) `get_specializations`
 *    (num_patches its default 13; our vision_size / vision_batch_size added and its 448-only
 *    img_size check left out: see qaic-vlm-specs-internvl.ts);
 *  - `llama4/modeling_llama4.py` (main ebf55e8159c8b87bff6d8028541b824244b16c81) `get_specializations`
 *    (max_num_tiles 17, its fallback; our language graph's vision_batch_size / per-tile vision_size:
 *    see qaic-vlm-specs-llama4.ts);
 *  - CCL and the sampler (main ebf55e8159c8b87bff6d8028541b824244b16c81): the dual-QPC `compile` runs
 *    `process_ccl_specializations` (check_ccl_specializations.py), then each family's
 *    `get_specializations(comp_ctx_lengths_prefill=…, comp_ctx_lengths_decode=…)` lays out one
 *    prefill entry per prefill value and one decode entry per decode value with `comp_ctx_lengths`
 *    (qwen2_5_vl/, gemma3/ modeling files); with `include_sampler` the export renames `logits`
 *    `next_tokens` and `sampler_utils.get_sampling_inputs_and_outputs` appends the penalty buffers'
 *    retained states, which `custom_io_lang` gives the KV dtype like every non-vision state;
 *  - disaggregated prefill (main ebf55e8159c8b87bff6d8028541b824244b16c81, modeling_auto.py
 *    `_QEffAutoModelForImageTextToTextDualQPC.compile`): with `prefill_only` the language QPC
 *    (`lang_prefill_qpc_path`) keeps `lang_specs[: len(comp_ctx_lengths_prefill)]` or `lang_specs[:1]`
 *    and `lang_model._compile` is not handed prefill_only (the hashed value stays null);
 *    `QEffCausalLMForTextImageToTextModel.export` asserts prefill_seq_len > 1;
 *  - `QEfficient/base/modeling_qeff.py` `_compile` (the command, `create_json` layout, the
 *    hashed parameters in the release/v1.22.8.0 layout the text-model test uses).
 * One deliberate difference, asserted here: Gemma 3's language graph gets no
 * `-node-precision-info` (QEfficient's `get_npi_file` knows only the published 4B/27B names).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { qeffVlmQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { recordingCompiler } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-qaic-vlm-');

describeFixtures('qaic-compile parity of VLM exports through a recording compiler', () => {
  let root = '';
  let bin = '';
  let record = '';
  const run = (args: string[]) =>
    cliInProcess(args, { cwd: root, env: { WEIGHT_SPEC_QAIC_COMPILE: bin, WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') } });
  const ok = async (args: string[]) => {
    const r = await run(args);
    expect(r.code, r.stderr).toBe(0);
    return r;
  };

  beforeAll(async () => {
    root = tmp();
    record = path.join(root, 'record');
    bin = recordingCompiler(root, record, true);
  });

  const cases: {
    tag: string;
    fixture: string;
    family: string;
    exp?: string[];
    comp: string[];
    py: Record<string, unknown>;
    /** The language entries' seq_len values the compile must keep (a prefill-only graph: the prefill slice only). */
    langSeqLens?: string[];
  }[] = [
    {
      // 80/32 and 112/32 end in .5: Python's round() goes to the even neighbour (64, 128)
      tag: 'qwen3_vl_moe at 80x112, mxint8 KV, mxfp6 (language only)',
      fixture: 'qwen3_vl_moe',
      family: 'qwen3_vl_moe',
      comp: ['--img-height', '80', '--img-width', '112', '--mxint8-kv-cache', '--mxfp6-matmul'],
      py: { height: 80, width: 112, mxint8_kv_cache: true, mxfp6_matmul: true },
    },
    {
      tag: 'qwen2_5_vl at 112x168, prefill 64, ctx 2048',
      fixture: 'qwen2_5_vl',
      family: 'qwen2_5_vl',
      comp: ['--img-height', '112', '--img-width', '168', '--prefill-seq-len', '64', '--ctx-len', '2048'],
      py: { height: 112, width: 168, prefill_seq_len: 64, ctx_len: 2048 },
    },
    {
      tag: 'qwen2_5_vl with continuous batching (full batch 2)',
      fixture: 'qwen2_5_vl',
      family: 'qwen2_5_vl',
      exp: ['--continuous-batching', '--batch-size', '2'],
      comp: ['--img-height', '112', '--img-width', '168'],
      py: { height: 112, width: 168, continuous_batching: true, full_batch_size: 2 },
    },
    { tag: 'gemma3_vlm at its image_size', fixture: 'gemma3_vlm', family: 'gemma3', comp: [], py: {} },
    { tag: 'llava at its image_size (prefill 592, ctx 1024)', fixture: 'llava', family: 'llava', comp: [], py: {} },
    {
      tag: 'llava_next at QEfficient’s 1109x1610',
      fixture: 'llava_next',
      family: 'llava_next',
      comp: ['--ctx-len', '2048', '--prefill-seq-len', '128'],
      py: { ctx_len: 2048, prefill_seq_len: 128 },
    },
    {
      tag: 'llava_next at the fixture image’s 17x51 (34 packed rows), continuous batching',
      fixture: 'llava_next',
      family: 'llava_next',
      exp: ['--continuous-batching', '--batch-size', '2'],
      comp: ['--img-height', '17', '--img-width', '51', '--ctx-len', '256', '--prefill-seq-len', '64'],
      py: { height: 17, width: 51, ctx_len: 256, prefill_seq_len: 64, continuous_batching: true, full_batch_size: 2 },
    },
    {
      tag: 'qwen2_5_vl with CCL (prefill 1024,1536, decode 1024,2048, ctx 2048)',
      fixture: 'qwen2_5_vl',
      family: 'qwen2_5_vl',
      exp: ['--ctx-len', '2048', '--comp-ctx-lengths-prefill', '1024,1536', '--comp-ctx-lengths-decode', '1024,2048'],
      comp: ['--img-height', '112', '--img-width', '168', '--prefill-seq-len', '64'],
      py: {
        height: 112,
        width: 168,
        prefill_seq_len: 64,
        ctx_len: 2048,
        ccl: [
          [1024, 1536],
          [1024, 2048],
        ],
      },
    },
    {
      tag: 'qwen2_5_vl with the on-device sampler',
      fixture: 'qwen2_5_vl',
      family: 'qwen2_5_vl',
      exp: ['--sampler'],
      comp: ['--img-height', '112', '--img-width', '168'],
      py: { height: 112, width: 168, sampler: true },
    },
    {
      tag: 'gemma3_vlm with CCL (prefill 1024, decode 1024,2048, ctx 2048)',
      fixture: 'gemma3_vlm',
      family: 'gemma3',
      exp: ['--ctx-len', '2048', '--comp-ctx-lengths-prefill', '1024', '--comp-ctx-lengths-decode', '1024,2048'],
      // the vision graph has no cache to read ctx_len from, and Gemma 3's Vision entry names it
      comp: ['--ctx-len', '2048'],
      py: { ctx_len: 2048, ccl: [[1024], [1024, 2048]] },
    },
    {
      tag: 'llava --phase prefill (lang_prefill_qpc_path: the Prefill entry only, prefill 64, ctx 256)',
      fixture: 'llava',
      family: 'llava',
      exp: ['--phase', 'prefill'],
      comp: ['--ctx-len', '256', '--prefill-seq-len', '64'],
      py: { ctx_len: 256, prefill_seq_len: 64, prefill_only: true },
      langSeqLens: ['64'],
    },
    {
      tag: 'qwen2_5_vl --phase prefill with CCL (one Prefill entry per prefill value: 1024, 1536 and ctx_len 2048 lowered to 2016)',
      fixture: 'qwen2_5_vl',
      family: 'qwen2_5_vl',
      exp: ['--phase', 'prefill', '--ctx-len', '2048', '--comp-ctx-lengths-prefill', '1024,1536', '--comp-ctx-lengths-decode', '1024,2048'],
      comp: ['--img-height', '112', '--img-width', '168', '--prefill-seq-len', '64'],
      py: {
        height: 112,
        width: 168,
        prefill_seq_len: 64,
        ctx_len: 2048,
        prefill_only: true,
        ccl: [
          [1024, 1536],
          [1024, 2048],
        ],
      },
      langSeqLens: ['64', '64', '64'],
    },
    {
      tag: 'gemma3_vlm --phase prefill with continuous batching (the Prefill entry with full_batch_exec_size)',
      fixture: 'gemma3_vlm',
      family: 'gemma3',
      exp: ['--phase', 'prefill', '--continuous-batching', '--batch-size', '2'],
      comp: ['--ctx-len', '256', '--prefill-seq-len', '64'],
      py: { ctx_len: 256, prefill_seq_len: 64, continuous_batching: true, full_batch_size: 2, prefill_only: true },
      langSeqLens: ['64'],
    },
    { tag: 'mistral3 at its image_size (prefill 128, ctx 4096)', fixture: 'mistral3', family: 'mistral3', comp: [], py: {} },
    {
      tag: 'mistral3 at img_size 16, continuous batching',
      fixture: 'mistral3',
      family: 'mistral3',
      exp: ['--continuous-batching', '--batch-size', '2'],
      comp: ['--img-size', '16', '--ctx-len', '256', '--prefill-seq-len', '64'],
      py: { img_size: 16, ctx_len: 256, prefill_seq_len: 64, continuous_batching: true, full_batch_size: 2 },
    },
    { tag: 'internvl at its tile size (13 tiles, prefill 3840, ctx 4096)', fixture: 'internvl', family: 'internvl', comp: [], py: {} },
    {
      tag: 'internvl, continuous batching, mxint8 KV',
      fixture: 'internvl',
      family: 'internvl',
      exp: ['--continuous-batching', '--batch-size', '2'],
      comp: ['--img-size', '16', '--ctx-len', '256', '--prefill-seq-len', '64', '--mxint8-kv-cache'],
      py: { img_size: 16, ctx_len: 256, prefill_seq_len: 64, continuous_batching: true, full_batch_size: 2, mxint8_kv_cache: true },
    },
    { tag: 'llama4_vlm at its image_size (prefill 32, ctx 4096, 17 tiles)', fixture: 'llama4_vlm', family: 'llama4', comp: [], py: {} },
    {
      tag: 'llama4_vlm with continuous batching, ctx 256 (chunk_ctx_len = the chunk, 8)',
      fixture: 'llama4_vlm',
      family: 'llama4',
      exp: ['--continuous-batching', '--batch-size', '2'],
      comp: ['--ctx-len', '256', '--prefill-seq-len', '64'],
      py: { ctx_len: 256, prefill_seq_len: 64, continuous_batching: true, full_batch_size: 2 },
    },
  ];

  const exported = new Map<string, string>();
  async function exportOf(fixture: string, exp: string[] = []): Promise<string> {
    const key = [fixture, ...exp].join(' ');
    if (exported.has(key)) return exported.get(key)!;
    const model = path.join(root, fixture);
    const fresh = !fs.existsSync(model);
    if (fresh) fs.cpSync(path.join(fixturesDir(), fixture), model, { recursive: true });
    const out = path.join(root, exp.length ? `export-${fixture}-${exp.join('_').replace(/[^\w.]+/g, '_')}` : `export-${fixture}`);
    await ok(['export', '--config', model, '--out', out, ...exp]);
    if (fresh) await ok(['prepare', '--checkpoint', model, '--dtype', 'float32']);
    exported.set(key, out);
    return out;
  }

  for (const c of cases) {
    it(`${c.tag}: argv, specializations.json, custom_io.yaml and hashed_compile_params.json of both graphs as QEfficient writes them`, async () => {
      const out = await exportOf(c.fixture, c.exp);
      const r = await ok(['compile', out, '--backend', 'qaic', ...c.comp]);
      const dirs = [...(r.stderr + r.stdout).matchAll(/-aic-binary-dir=(\S+)\/qpc$/gm)].map((x) => x[1]!);
      const dirOf = (g: string) => dirs.find((d) => path.basename(path.dirname(d)) === g)!;
      const onnxOf = (g: string) => {
        const argv = fs.readFileSync(path.join(record, g, 'argv'), 'utf8').split('\n');
        return argv.find((a) => a.startsWith('-m='))!.slice(3);
      };
      // the ONNX handed over is the graph (model.onnx, or model.qaic.onnx with the spec embedded) in its own folder
      for (const g of ['vision', 'language']) expect(path.dirname(onnxOf(g))).toBe(path.join(out, g));
      const want = qeffVlmQaicCompile({
        config: path.join(fixturesDir(), c.fixture, 'config.json'),
        family: c.family,
        height: null,
        width: null,
        img_size: null,
        prefill_seq_len: null,
        ctx_len: null,
        mxint8_kv_cache: false,
        mxfp6_matmul: false,
        continuous_batching: false,
        full_batch_size: null,
        ...c.py,
        compiler: bin,
        onnx: { vision: onnxOf('vision'), language: onnxOf('language') },
        compile_dir: { vision: dirOf('vision'), language: dirOf('language') },
      });
      for (const g of ['vision', 'language'] as const) {
        expect(
          fs
            .readFileSync(path.join(record, g, 'argv'), 'utf8')
            .trim()
            .split('\n'),
          g,
        ).toEqual(want[g].argv);
        expect(fs.readFileSync(path.join(record, g, 'specializations.json'), 'utf8'), g).toBe(want[g].specializations);
        expect(fs.readFileSync(path.join(record, g, 'custom_io.yaml'), 'utf8'), g).toBe(want[g].custom_io);
        expect(fs.readFileSync(path.join(dirOf(g), 'hashed_compile_params.json'), 'utf8'), g).toBe(want[g].hashed);
      }
      expect(JSON.parse(want.vision.specializations).specializations[0].name).toBe('Vision');
      if (c.langSeqLens) {
        // what a prefill-only language QPC changes, read off the files themselves: only the prefill entries are
        // compiled; the language `_compile` is handed no prefill_only (hashed null), the command is the plain one's
        const lang = JSON.parse(fs.readFileSync(path.join(record, 'language', 'specializations.json'), 'utf8')).specializations as {
          symbols: Record<string, string>;
        }[];
        expect(lang.map((e) => e.symbols.seq_len)).toEqual(c.langSeqLens);
        expect(JSON.parse(fs.readFileSync(path.join(dirOf('language'), 'hashed_compile_params.json'), 'utf8')).prefill_only).toBeNull();
        const meta = fs.readFileSync(path.join(out, 'language', 'export-report.json'), 'utf8');
        expect(JSON.parse(meta).options.phase).toBe('prefill');
      }
      // the fixture image's size: the processor's 34 image tokens (llava_next reference.json) in both graphs
      if (c.py.height === 17)
        for (const g of ['vision', 'language'])
          expect(
            JSON.parse(fs.readFileSync(path.join(record, g, 'specializations.json'), 'utf8')).specializations[0].symbols.vision_size,
          ).toBe('34');
    });
  }

  it('refuses with one line (exit 2): image flags for a text model or another family, an image the graph cannot meet', async () => {
    const llama = path.join(root, 'llama');
    fs.cpSync(path.join(fixturesDir(), 'llama'), llama, { recursive: true });
    await ok(['export', '--config', llama, '--out', path.join(root, 'export-llama'), '--ctx-len', '64']);
    const refusals: [string[], RegExp][] = [
      [
        ['compile', 'export-llama', '--backend', 'qaic', '--dry-run', '--img-height', '64'],
        /--img-height size the image of a vision-language export; .* is a text model/,
      ],
      [
        ['compile', 'export-gemma3_vlm', '--backend', 'qaic', '--dry-run', '--img-size', '64'],
        /pixel_values has 32 at dim 2 \(its img_size\), but the compile asks for img_size 64/,
      ],
      [
        ['compile', 'export-gemma3_vlm', '--backend', 'qaic', '--dry-run', '--img-height', '32', '--img-width', '32'],
        /a Gemma 3 export takes --img-size/,
      ],
      [['compile', 'export-qwen2_5_vl', '--backend', 'qaic', '--dry-run', '--img-size', '64'], /--img-size is Gemma 3's/],
      [
        ['compile', 'export-qwen2_5_vl', '--backend', 'qaic', '--dry-run', '--img-height', '112'],
        /give --img-height and --img-width together/,
      ],
      // QEfficient's default 354x536 with factor 28 on the fixture's patch 4 gives 91x133 patches
      [
        ['compile', 'export-qwen2_5_vl', '--backend', 'qaic', '--dry-run'],
        /resizes to 364x532 = 91x133 patches, which the 2x2 patch merger cannot pool/,
      ],
      [
        [
          'compile',
          'export-qwen3_vl_moe',
          '--backend',
          'qaic',
          '--dry-run',
          '--img-height',
          '1024',
          '--img-width',
          '1024',
          '--ctx-len',
          '4096',
        ],
        /vision_size 16384, which must be less than ctx_len 4096/,
      ],
    ];
    for (const f of ['gemma3_vlm', 'qwen2_5_vl', 'qwen3_vl_moe']) await exportOf(f);
    // QEffCausalLMForTextImageToTextModel.export(prefill_only=True): `assert prefill_seq_len > 1`
    const prefillOnly = path.relative(root, await exportOf('llava', ['--phase', 'prefill']));
    refusals.push([
      ['compile', prefillOnly, '--backend', 'qaic', '--dry-run', '--prefill-seq-len', '1'],
      /the language graph was exported with --phase prefill, which needs prefill_seq_len > 1/,
    ]);
    for (const [args, msg] of refusals) {
      const r = await run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0], args.join(' ')).toMatch(msg);
    }
  });
});
