/**
 * QEfficient's qaic-compile rules for a causal LM, transcribed to Python (json.dumps does the
 * JSON, not our writer), for the qaic parity tests (qaic-qeff-parity, qaic-recording-parity;
 * the VLM rules at the end for qaic-recording-vlm):
 * the command line, `specializations.json` (named form), `custom_io.yaml` and
 * `hashed_compile_params.json` QEfficient writes for the given options. The sources, from
 * quic/efficient-transformers (cited with their commits in those tests' headers):
 * `QEfficient/transformers/models/modeling_auto.py` `QEFFAutoModelForCausalLM.compile` /
 * `build_prefill_specialization` / `build_decode_specialization`,
 * `QEfficient/utils/check_ccl_specializations.py` `validate_ccl_lists`,
 * `QEfficient/base/modeling_qeff.py` `_compile` and `QEfficient/utils/_utils.py` `create_json` /
 * `to_named_specializations`.
 */
import { spawnSync } from 'node:child_process';

const QEFF_COMPILE = `
import json
dump = lambda o: json.dumps(o, indent=4, separators=(",", ":"), sort_keys=True)
def qeff_compile(compiler, hw, onnx, specializations, module_name, custom_io, compiler_options, compile_dir, num_speculative_tokens=None, model_in_bfloat16=False):
    command = [compiler, "-aic-hw", f"-aic-hw-version={hw}", f"-m={onnx}"]
    for key, value in compiler_options.items():
        option = "-" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                command.append(option)
            continue
        command.append(f"{option}={value}")
    compile_hash_params = {"command": command, "specializations": specializations, "custom_io": custom_io,
                           "mdp_ts_num_devices": 1, "mdp_ts_json": None, "num_speculative_tokens": num_speculative_tokens}
    if module_name:
        names = [module_name for _ in specializations]
    else:
        # _infer_specialization_name: the _graph_name tag first (here only on TLM entries), else by seq_len
        names = [s.get("_graph_name") or ("Prefill" if int(s["seq_len"]) > 1 else "Decode") for s in specializations]
    specializations = [{k: v for k, v in s.items() if k != "_graph_name"} for s in specializations]
    compile_hash_params["specializations"] = specializations
    names = [f"{n}_{names[:i].count(n)}" if names.count(n) > 1 else n for i, n in enumerate(names)]
    named = [{"name": n, "symbols": {k: str(v) for k, v in s.items()}} for n, s in zip(names, specializations)]
    command.append(f"-network-specialization-config={compile_dir}/specializations.json")
    pkv_in_bfloat16 = any("past_" in k and "bfloat16" in v for k, v in custom_io.items())
    if not (model_in_bfloat16 and pkv_in_bfloat16):
        command.append(f"-custom-IO-list-file={compile_dir}/custom_io.yaml")
    command.append(f"-aic-binary-dir={compile_dir}/qpc")
    return {"command": command, "argv": command[1:], "specializations": dump({"specializations": named}),
            "custom_io": "".join(f" - IOName: {n}\\n   Precision: {d}\\n\\n" for n, d in custom_io.items()),
            "hashed": dump(compile_hash_params)}
`;

const QEFF_RULES = `
import json, sys
a = json.loads(sys.argv[1])
batch_size, ctx_len, full_batch_size = a["batch_size"], a["ctx_len"], a["full_batch_size"]
prefill_seq_len = 1 if a["decode_only"] else a["prefill_seq_len"]
cb = a["continuous_batching"]
CCL_MIN_CTX_LEN = 1024
CCL_UNIQNE_STEP = 32
def validate_ccl_lists(ccl_prefill, ccl_decode, ctx_len, prefill_seq_len):
    ccl_prefill = [x if x >= CCL_MIN_CTX_LEN else CCL_MIN_CTX_LEN for x in ccl_prefill]
    ccl_decode = [x if x >= CCL_MIN_CTX_LEN else CCL_MIN_CTX_LEN for x in ccl_decode]
    if ccl_prefill[-1] < ctx_len:
        ccl_prefill.append(ctx_len)
    if ccl_decode[-1] < ctx_len:
        ccl_decode.append(ctx_len)
    if prefill_seq_len == 1:
        u = sorted(set([min(x, ctx_len) for x in ccl_prefill + ccl_decode]))
        return u, u
    ccl_prefill = sorted({min(x, ctx_len) for x in ccl_prefill})
    ccl_decode = sorted({min(x, ctx_len) for x in ccl_decode})
    tmp_prefill = ccl_prefill
    ccl_prefill = []
    for val in tmp_prefill:
        while val in ccl_decode or val in ccl_prefill:
            val = (val - 1) // CCL_UNIQNE_STEP * CCL_UNIQNE_STEP
            if val < 0:
                break
        if val >= 0:
            ccl_prefill.append(val)
    ccl_prefill.sort()
    return ccl_prefill, ccl_decode
kv_cache_batch_size = full_batch_size if full_batch_size else batch_size
nst = a.get("num_speculative_tokens")
is_tlm = nst is not None
decode_ks = sorted(set(nst)) if isinstance(nst, list) else ([nst] if nst is not None else None)
if is_tlm and prefill_seq_len < decode_ks[-1] + 1:
    raise ValueError("sequence length must be at least num_speculative_tokens+1")
def prefill_spec(ccl):
    s = {"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len}
    if ccl is not None:
        s["comp_ctx_lengths"] = ccl
    if is_tlm:
        s["num_logits_to_keep"] = 1
        s["_graph_name"] = "Prefill"
    if cb:
        s["full_batch_size"] = kv_cache_batch_size
    else:
        s["batch_size"] = kv_cache_batch_size
    if full_batch_size:
        s["full_batch_exec_size"] = full_batch_size
    return s
def decode_spec(ccl, k=None):
    decode_seq_len = (k + 1) if is_tlm else 1
    if decode_seq_len == prefill_seq_len and not cb:
        return None
    s = {"batch_size": full_batch_size if cb else batch_size, "seq_len": decode_seq_len, "ctx_len": ctx_len}
    if ccl is not None:
        s["comp_ctx_lengths"] = ccl
    if is_tlm:
        s["num_logits_to_keep"] = k + 1
        s["_graph_name"] = "Decode"
    if cb:
        s["full_batch_size"] = kv_cache_batch_size
    else:
        s["batch_size"] = kv_cache_batch_size
    return s
specializations = []
if is_tlm:
    specializations.append(prefill_spec(None))
    specializations += [d for d in (decode_spec(None, k) for k in decode_ks) if d]
elif a["ccl"]:
    ccl_prefill, ccl_decode = validate_ccl_lists(list(a["ccl"][0]), list(a["ccl"][1]), ctx_len, prefill_seq_len)
    specializations += [prefill_spec(c) for c in ccl_prefill]
    specializations += [d for d in (decode_spec(c) for c in ccl_decode) if d]
else:
    specializations.append(prefill_spec(None))
    d = decode_spec(None)
    if d:
        specializations.append(d)
custom_io = {}
# _resolve_torch_dtype: bfloat16 stays only on ai200 (else float32); CUSTOM_IO_DTYPE_MAP
target_dtype = "bfloat16" if a.get("dtype") == "bfloat16" and a["hw"] == "ai200" else "float32"
CUSTOM_IO_DTYPE_MAP = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float16"}
kv_dtype = "mxint8" if a["mxint8_kv_cache"] else CUSTOM_IO_DTYPE_MAP[target_dtype]
for i in range(a["num_layers"]):
    for kv in ["key", "value"]:
        custom_io[f"past_{kv}.{i}"] = kv_dtype
        custom_io[f"past_{kv}.{i}_RetainedState"] = kv_dtype
compiler_options = dict(retained_state=True, convert_to_fp16=(CUSTOM_IO_DTYPE_MAP[target_dtype] == "float16"), mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=a["num_cores"])
print(json.dumps(qeff_compile(a["compiler"], a["hw"], a["onnx"], specializations, None, custom_io, compiler_options, a["compile_dir"], nst, target_dtype == "bfloat16")))
`;

/** What QEfficient's rules give: the full command, its argv after the compiler, and the three files' text. */
export interface QeffQaicCompile {
  command: string[];
  argv: string[];
  specializations: string;
  custom_io: string;
  hashed: string;
}

/**
 * Runs the rules for `args`: compiler, hw, batch_size, full_batch_size, continuous_batching,
 * decode_only, ccl ([prefill, decode] or null), prefill_seq_len, ctx_len, num_layers,
 * mxint8_kv_cache, mxfp6_matmul, num_cores, onnx and compile_dir.
 */
export function qeffQaicCompile(args: Record<string, unknown>): QeffQaicCompile {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_COMPILE + QEFF_RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as QeffQaicCompile;
}

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
vision_opts = dict(convert_to_fp16=True, mxfp6_matmul=False, aic_num_cores=16, node_precision_info=False)
lang_opts = dict(retained_state=True, convert_to_fp16=True, mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=16)
compile_ = lambda g, specs, module_name, custom_io, opts: qeff_compile(a["compiler"], "ai100", a["onnx"][g], specs, module_name, custom_io, opts, a["compile_dir"][g])
print(json.dumps({"vision": compile_("vision", vision, "Vision", custom_io_vision, vision_opts),
                  "language": compile_("language", lang, None, custom_io_lang, lang_opts)}))
`;

/**
 * Runs QEfficient's dual-QPC VLM rules (`QEFFAutoModelForImageTextToText.compile`; sources cited
 * in qaic-recording-vlm.test.ts) for `args`: config (the model's config.json), family, height,
 * width, img_size, prefill_seq_len, ctx_len (null: QEfficient's defaults), mxint8_kv_cache,
 * mxfp6_matmul, continuous_batching, full_batch_size, compiler, and onnx / compile_dir per graph.
 */
export function qeffVlmQaicCompile(args: Record<string, unknown>): Record<'vision' | 'language', QeffQaicCompile> {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_COMPILE + QEFF_VLM_RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<'vision' | 'language', QeffQaicCompile>;
}
