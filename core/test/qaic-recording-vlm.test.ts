/**
 * qaic-compile parity for the two graphs of a VLM export (issue 30 item 1, issue 33's
 * "QEfficient's interface"): a recording `qaic-compile` (a shell script saving its argv and the
 * files it is handed, one folder per graph) stands in for the compiler; what it received, and
 * the `hashed_compile_params.json` beside each QPC, are compared with what QEfficient's rules
 * produce — transcribed to Python below from quic/efficient-transformers, reading the model's
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
 *    `qwen2_5_vl/modeling_qwen2_5_vl.py` (commit 02cdf56d505bdc3cf033e515713360c6322021ea),
 *    `gemma3/modeling_gemma3.py` (commit 00f00e10dea37470d285bd98e152814ed535f2d5):
 *    `get_specializations`, `get_output_names(kv_offload=True)`;
 *  - `smart_resize`: QwenLM/Qwen3-VL `qwen-vl-utils/src/qwen_vl_utils/vision_process.py` (commit
 *    004d5e0a0d4514ce8945356ae8c969f4dc0080dc), as QEfficient's Qwen2.5-VL copy; Qwen3-VL's factor
 *    `IMAGE_FACTOR_QWEN_3` and token bounds `IMAGE_MIN/MAX_TOKEN_NUM` are taken as 32, 4 and
 *    16384 (qwen-vl-utils' values; QEfficient's constants.py holding them is not in the index);
 *  - `QEfficient/base/modeling_qeff.py` `_compile` (the command, `create_json` layout, the
 *    hashed parameters in the release/v1.22.8.0 layout the text-model test uses).
 * Two deliberate differences, asserted here: Qwen2.5-VL's Vision entry carries `time` 1 (our
 * vision graph names dim 1 of image_grid_thw `time`; QEfficient's fixes it at 1), and Gemma 3's
 * language graph gets no `-node-precision-info` (QEfficient's `get_npi_file` knows only the
 * published 4B/27B names).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess } from '../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';

const tmp = tempDirs('ws-qaic-vlm-');

const QEFF_VLM_RULES = `
import json, math, sys
a = json.loads(sys.argv[1])
cfg = json.load(open(a["config"]))
fam = a["family"]
MAX_RATIO = 200
def round_by_factor(number, factor): return round(number / factor) * factor
def ceil_by_factor(number, factor): return math.ceil(number / factor) * factor
def floor_by_factor(number, factor): return math.floor(number / factor) * factor
def smart_resize(height, width, factor, min_pixels, max_pixels):
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError("ratio")
    h_bar = max(factor, round_by_factor(height, factor))
    w_bar = max(factor, round_by_factor(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = floor_by_factor(height / beta, factor)
        w_bar = floor_by_factor(width / beta, factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = ceil_by_factor(height * beta, factor)
        w_bar = ceil_by_factor(width * beta, factor)
    return h_bar, w_bar
batch_size = 1
cb, full_batch_size = a["continuous_batching"], a["full_batch_size"]
kv_cache_batch_size = full_batch_size or batch_size
ctx_len = a["ctx_len"] or 4096
kv_dtype = "mxint8" if a["mxint8_kv_cache"] else "float16"
if fam in ("qwen3_vl_moe", "qwen2_5_vl"):
    prefill_seq_len = a["prefill_seq_len"] or 128
    vc = cfg["vision_config"]
    patch_size, temporal_patch_size, channel = vc["patch_size"], vc["temporal_patch_size"], 3
    height, width = a["height"] or 354, a["width"] or 536
    f = 32 if fam == "qwen3_vl_moe" else 28
    resized_height, resized_width = smart_resize(height, width, f, 4 * f * f, 16384 * f * f)
    grid_h, grid_w = resized_height // patch_size, resized_width // patch_size
    grid_height = grid_h * grid_w
    grid_width = patch_size * patch_size * temporal_patch_size * channel
    time = 1
    if fam == "qwen3_vl_moe":
        nfl = len(vc["deepstack_visual_indexes"])
        vision_size = grid_height // 4 * time
        grid_height = grid_height * time * batch_size
        vision = [{"batch_size": batch_size, "vision_size": vision_size, "grid_height": grid_height, "grid_width": grid_width,
                   "grid_h": grid_h, "grid_w": grid_w, "time": time, "num_feature_layers": nfl}]
        extra = {"num_feature_layers": nfl}
        num_layers = cfg["text_config"]["num_hidden_layers"]
    else:
        vision_size = grid_height // 4
        grid_height = grid_height * batch_size
        vision = [{"batch_size": batch_size, "vision_size": vision_size, "grid_height": grid_height, "grid_width": grid_width,
                   "grid_h": grid_h, "grid_w": grid_w}]
        vision[0]["time"] = 1  # our graph's image_grid_thw dim 1 is the symbol "time" (see the header)
        extra = {}
        num_layers = cfg["num_hidden_layers"]
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "vision_size": vision_size, "vision_batch_size": batch_size, **extra},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": 1, "ctx_len": ctx_len, "vision_size": vision_size, "vision_batch_size": batch_size, **extra}]
else:
    prefill_seq_len = a["prefill_seq_len"] or 32
    img_size = a["img_size"] or cfg["vision_config"]["image_size"]
    mm = cfg.get("mm_tokens_per_image", 256)
    sw = cfg["text_config"]["sliding_window"]
    vision = [{"batch_size": batch_size, "img_size": img_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len}]
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "sliding_window": sw, "img_size": img_size, "mm_tokens_per_image": mm, "vision_batch_size": batch_size},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": "1", "ctx_len": ctx_len, "sliding_window": sw, "img_size": img_size, "mm_tokens_per_image": mm, "vision_batch_size": batch_size}]
    num_layers = cfg["text_config"]["num_hidden_layers"]
for i, s in enumerate(lang):
    if cb:
        s["full_batch_size"] = kv_cache_batch_size
    else:
        s["batch_size"] = kv_cache_batch_size
    if i == 0 and full_batch_size:
        s["full_batch_exec_size"] = full_batch_size
vision_output_names = ["vision_embeds"] + (["deepstack_features"] if fam == "qwen3_vl_moe" else [])
lang_output_names = ["logits"]
for i in range(num_layers):
    for kv in ["key", "value"]:
        lang_output_names.append(f"past_{kv}.{i}_RetainedState")
lang_output_names.insert(1, "vision_embeds_RetainedState")
lang_output_names.insert(2, "image_idx_output")
if fam == "qwen3_vl_moe":
    lang_output_names.insert(2, "deepstack_features_RetainedState")
custom_io_vision = {"pixel_values": "float16"}
for o in vision_output_names:
    custom_io_vision[o] = kv_dtype if o.startswith("past_") else "float16"
custom_io_lang = {}
for o in lang_output_names:
    if o.endswith("_RetainedState"):
        dtype = "float16" if ("vision_embeds" in o or "deepstack_features" in o) else kv_dtype
        custom_io_lang[o[: -len("_RetainedState")]] = dtype
        custom_io_lang[o] = dtype
dump = lambda o: json.dumps(o, indent=4, separators=(",", ":"), sort_keys=True)
def compile_(graph, specializations, module_name, custom_io, compiler_options):
    command = [a["compiler"], "-aic-hw", "-aic-hw-version=ai100", f"-m={a['onnx'][graph]}"]
    for key, value in compiler_options.items():
        option = "-" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                command.append(option)
            continue
        command.append(f"{option}={value}")
    hashed = {"command": command, "specializations": specializations, "custom_io": custom_io,
              "mdp_ts_num_devices": 1, "mdp_ts_json": None, "num_speculative_tokens": None}
    if module_name:
        names = [module_name for _ in specializations]
    else:
        names = [("Prefill" if int(s["seq_len"]) > 1 else "Decode") for s in specializations]
    names = [f"{n}_{names[:i].count(n)}" if names.count(n) > 1 else n for i, n in enumerate(names)]
    named = [{"name": n, "symbols": {k: str(v) for k, v in s.items()}} for n, s in zip(names, specializations)]
    d = a["compile_dir"][graph]
    command.append(f"-network-specialization-config={d}/specializations.json")
    command.append(f"-custom-IO-list-file={d}/custom_io.yaml")
    command.append(f"-aic-binary-dir={d}/qpc")
    return {"argv": command[1:], "specializations": dump({"specializations": named}),
            "custom_io": "".join(f" - IOName: {n}\\n   Precision: {t}\\n\\n" for n, t in custom_io.items()), "hashed": dump(hashed)}
vision_opts = dict(convert_to_fp16=True, mxfp6_matmul=False, aic_num_cores=16, node_precision_info=False)
lang_opts = dict(retained_state=True, convert_to_fp16=True, mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=16)
print(json.dumps({"vision": compile_("vision", vision, "Vision", custom_io_vision, vision_opts),
                  "language": compile_("language", lang, None, custom_io_lang, lang_opts)}))
`;

interface Want {
  argv: string[];
  specializations: string;
  custom_io: string;
  hashed: string;
}

function qeff(args: Record<string, unknown>): Record<'vision' | 'language', Want> {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_VLM_RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<'vision' | 'language', Want>;
}

/** The stand-in compiler: per graph (the folder of its -m ONNX), argv one per line and each file it is handed. */
function recordingCompiler(dir: string, record: string): string {
  const bin = path.join(dir, 'qaic-compile');
  fs.writeFileSync(
    bin,
    [
      '#!/bin/sh',
      'for a in "$@"; do case "$a" in -m=*) g=$(basename "$(dirname "${a#-m=}")");; esac; done',
      `rec='${record}'/"$g"`,
      'rm -rf "$rec"; mkdir -p "$rec"',
      `printf '%s\\n' "$@" > "$rec/argv"`,
      'for a in "$@"; do',
      '  case "$a" in',
      '    -network-specialization-config=*|-custom-IO-list-file=*) f="${a#*=}"; cp "$f" "$rec/$(basename "$f")";;',
      '    -aic-binary-dir=*) d="${a#-aic-binary-dir=}"; mkdir -p "$d"; echo qpc > "$d/programqpc.bin";;',
      '  esac',
      'done',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return bin;
}

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
    bin = recordingCompiler(root, record);
  });

  const cases: { tag: string; fixture: string; family: string; exp?: string[]; comp: string[]; py: Record<string, unknown> }[] = [
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
  ];

  const exported = new Map<string, string>();
  async function exportOf(fixture: string, exp: string[] = []): Promise<string> {
    const key = [fixture, ...exp].join(' ');
    if (exported.has(key)) return exported.get(key)!;
    const model = path.join(root, fixture);
    const fresh = !fs.existsSync(model);
    if (fresh) fs.cpSync(path.join(fixturesDir(), fixture), model, { recursive: true });
    const out = path.join(root, exp.length ? `export-${fixture}-cb` : `export-${fixture}`);
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
      const want = qeff({
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
    for (const [args, msg] of refusals) {
      const r = await run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0], args.join(' ')).toMatch(msg);
    }
  });
});
