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
def to_named_specializations(specializations, module_name=None):
    result = []
    for index, spec in enumerate(specializations):
        if "_graph_name" in spec:
            name = spec["_graph_name"]
        elif module_name is not None:
            name = module_name
        elif "seq_len" not in spec:
            name = f"Graph_{index}"
        else:
            name = "Decode" if str(spec["seq_len"]) == "1" else "Prefill"
        result.append({"name": name, "symbols": {k: str(v) for k, v in spec.items() if k != "_graph_name"}})
    seen = {}
    for entry in result:
        name = entry["name"]
        if name in seen:
            if seen[name] == 1:
                first_idx = next(i for i, e in enumerate(result) if e["name"] == name)
                result[first_idx] = {**result[first_idx], "name": f"{name}_0"}
            entry["name"] = f"{name}_{seen[name]}"
        seen[name] = seen.get(name, 0) + 1
    return result
def generate_mdp_partition_config(num_devices, num_cores):
    return {"connections": [{"devices": list(range(num_devices)), "type": "p2p"}],
            "partitions": [{"name": "Partition0", "devices": [{"deviceId": d, "numCores": num_cores} for d in range(num_devices)]}]}
def qeff_compile(compiler, hw, onnx, specializations, module_name, custom_io, compiler_options, compile_dir,
                 num_speculative_tokens=None, model_in_bfloat16=False, mdp_ts_num_devices=1, mdp_num_partitions=1,
                 disagg_json=None, prefill_only=None):
    command = [compiler, "-aic-hw", f"-aic-hw-version={hw}", f"-m={onnx}"]
    mdp_ts_json = None
    mdp_ts_json_path = None
    files = {}
    base_dir = compile_dir.rsplit("/", 1)[0]  # the un-hashed compile_dir: qpc-<hash> is made in it
    if mdp_num_partitions > 1:
        mdp_ts_json_path = f"{base_dir}/mdp_disagg_{mdp_ts_num_devices}d_{mdp_num_partitions}p.json"
        mdp_ts_json = disagg_json
        files["mdp"] = dump(mdp_ts_json)
        command.append(f"-mdp-load-partition-config={mdp_ts_json_path}")
    elif mdp_ts_num_devices > 1 and not compiler_options.get("mdp_dump_partition_config", None):
        mdp_ts_json = generate_mdp_partition_config(mdp_ts_num_devices, compiler_options.get("aic_num_cores", 16))
    for key, value in compiler_options.items():
        option = "-" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                command.append(option)
            continue
        command.append(f"{option}={value}")
    compile_hash_params = {"command": command, "specializations": specializations, "custom_io": custom_io,
                           "mdp_ts_num_devices": mdp_ts_num_devices, "mdp_num_partitions": mdp_num_partitions,
                           "mdp_strategy": "onnx", "mdp_ts_json": mdp_ts_json,
                           "num_speculative_tokens": num_speculative_tokens, "prefill_only": prefill_only}
    if mdp_ts_json is not None and mdp_ts_json_path is None:
        mdp_ts_json_path = f"{compile_dir}/mdp_ts_{mdp_ts_num_devices}.json"
        files["mdp"] = dump(mdp_ts_json)
        command.append(f"-mdp-load-partition-config={mdp_ts_json_path}")
    named = to_named_specializations(specializations, module_name=module_name)
    command.append(f"-network-specialization-config={compile_dir}/specializations.json")
    pkv_in_bfloat16 = any("past_" in k and "bfloat16" in v for k, v in custom_io.items())
    if not (model_in_bfloat16 and pkv_in_bfloat16):
        command.append(f"-custom-IO-list-file={compile_dir}/custom_io.yaml")
    command.append(f"-aic-binary-dir={compile_dir}/qpc")
    return {"command": command, "argv": command[1:], "specializations": dump({"specializations": named}),
            "custom_io": "".join(f" - IOName: {n}\\n   Precision: {d}\\n\\n" for n, d in custom_io.items()),
            "hashed": dump(compile_hash_params), "mdp_path": mdp_ts_json_path, "mdp": files.get("mdp")}
`;

/** `validate_ccl_lists` (check_ccl_specializations.py), shared by the causal-LM and the VLM rules. */
const QEFF_CCL = `
CCL_MIN_CTX_LEN = 1024
CCL_UNIQNE_STEP = 32
def validate_ccl_lists(ccl_prefill, ccl_decode, ctx_len, prefill_seq_len):
    ccl_prefill = [x if x >= CCL_MIN_CTX_LEN else CCL_MIN_CTX_LEN for x in ccl_prefill]
    if ccl_prefill[-1] < ctx_len:
        ccl_prefill.append(ctx_len)
    ccl_decode = [x if x >= CCL_MIN_CTX_LEN else CCL_MIN_CTX_LEN for x in ccl_decode]
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
`;

const QEFF_RULES = `
import json, sys
a = json.loads(sys.argv[1])
batch_size, ctx_len, full_batch_size = a["batch_size"], a["ctx_len"], a["full_batch_size"]
cb = a["continuous_batching"]
# an export made with --phase decode is compiled with prefill_only=False; --phase prefill with True
prefill_only = False if a["decode_only"] else a.get("prefill_only")
prefill_seq_len = a["prefill_seq_len"]
kv_cache_batch_size = full_batch_size or batch_size
nst = a.get("num_speculative_tokens")
is_tlm = nst is not None
decode_ks = sorted(set(nst)) if isinstance(nst, list) else ([nst] if nst is not None else None)
if is_tlm and prefill_seq_len < decode_ks[-1] + 1:
    raise ValueError("sequence length must be at least num_speculative_tokens+1")
ccl_p = ccl_d = None
if a["ccl"]:
    ccl_p, ccl_d = validate_ccl_lists(list(a["ccl"][0]), list(a["ccl"][1]), ctx_len, prefill_seq_len)
# QEfficient/transformers/models/gpt_oss/modeling_gpt_oss.py QEffGptOssForCausalLM.get_specializations (main ebf55e81)
def gpt_oss_get_specializations(batch_size, prefill_seq_len, ctx_len, **kwargs):
    batch_size = batch_size if batch_size else 1
    if kwargs.get("prefill_only") and not kwargs.get("enable_chunking") and ctx_len != prefill_seq_len:
        ctx_len = prefill_seq_len
    return [{"batch_size": batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "sliding_window": 128},
            {"batch_size": batch_size, "seq_len": 1, "ctx_len": ctx_len, "sliding_window": 128}]
has_get_specializations = a.get("model_type") == "gpt_oss"
def build_prefill_specialization(comp_ctx_lengths=None):
    if not cb:
        exec_batch_size = batch_size
    elif prefill_seq_len == 1:
        exec_batch_size = full_batch_size
    else:
        exec_batch_size = 1
    if has_get_specializations:
        spec = gpt_oss_get_specializations(exec_batch_size, prefill_seq_len, ctx_len, prefill_only=prefill_only,
                                           enable_chunking=a.get("enable_chunking", False))[0]
    else:
        spec = {"batch_size": exec_batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len}
    if comp_ctx_lengths is not None:
        spec["comp_ctx_lengths"] = comp_ctx_lengths
    spec["num_logits_to_keep"] = 1 if is_tlm else None
    if cb:
        spec["full_batch_size"] = kv_cache_batch_size
    else:
        spec["batch_size"] = kv_cache_batch_size
    if full_batch_size:
        spec["full_batch_exec_size"] = exec_batch_size
    result = {k: v for k, v in spec.items() if v is not None}
    result["_graph_name"] = "Decode" if prefill_seq_len == 1 and prefill_only is False else "Prefill"
    return result
def build_decode_specialization(comp_ctx_lengths=None, num_speculative_tokens=None):
    decode_seq_len = (num_speculative_tokens + 1) if is_tlm else 1
    if decode_seq_len == prefill_seq_len and not cb:
        return None
    if has_get_specializations:
        spec = gpt_oss_get_specializations(full_batch_size if cb else batch_size, decode_seq_len, ctx_len)[1]
    else:
        spec = {"batch_size": full_batch_size if cb else batch_size, "seq_len": decode_seq_len, "ctx_len": ctx_len}
    if comp_ctx_lengths is not None:
        spec["comp_ctx_lengths"] = comp_ctx_lengths
    spec["num_logits_to_keep"] = (num_speculative_tokens + 1) if is_tlm else None
    if cb:
        spec["full_batch_size"] = kv_cache_batch_size
    else:
        spec["batch_size"] = kv_cache_batch_size
    result = {k: v for k, v in spec.items() if v is not None}
    result["_graph_name"] = "Decode"
    return result
specializations = []
if prefill_only is None or prefill_only or prefill_seq_len == 1:
    if ccl_p is not None or ccl_d is not None:
        ccl_lengths = ccl_d if prefill_seq_len == 1 else ccl_p
        for c in ccl_lengths:
            specializations.append(build_prefill_specialization(c))
    else:
        specializations.append(build_prefill_specialization())
if (prefill_only is None or not prefill_only) and prefill_seq_len != 1:
    if decode_ks is not None and is_tlm:
        for k in decode_ks:
            d = build_decode_specialization(num_speculative_tokens=k)
            if d is not None:
                specializations.append(d)
    elif ccl_d is not None:
        for c in ccl_d:
            d = build_decode_specialization(c)
            if d:
                specializations.append(d)
    else:
        d = build_decode_specialization()
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
print(json.dumps(qeff_compile(a["compiler"], a["hw"], a["onnx"], specializations, None, custom_io, compiler_options, a["compile_dir"],
                              nst, target_dtype == "bfloat16", a.get("num_devices", 1), a.get("num_partitions", 1),
                              a.get("disagg_json"), prefill_only)))
`;

/** What QEfficient's rules give: the full command, its argv after the compiler, and the three files' text. */
export interface QeffQaicCompile {
  command: string[];
  argv: string[];
  specializations: string;
  custom_io: string;
  hashed: string;
  /** The partition config file and its text (null without MDP). */
  mdp_path: string | null;
  mdp: string | null;
}

/**
 * The arguments of `QEFFAutoModelForCausalLM.compile(prefill_only=True)` (disaggregated
 * prefill) that our compile does not vary: one sequence on ai100, no continuous batching, no
 * CCL, no MX formats. A test spreads them and adds its graph's own (ctx_len, cores, layers…).
 */
export const QEFF_PREFILL_ONLY = {
  hw: 'ai100',
  batch_size: 1,
  full_batch_size: null,
  continuous_batching: false,
  decode_only: false,
  prefill_only: true,
  ccl: null,
  mxfp6_matmul: false,
  mxint8_kv_cache: false,
} as const;

/**
 * Runs the rules for `args`: compiler, hw, batch_size, full_batch_size, continuous_batching,
 * decode_only, ccl ([prefill, decode] or null), prefill_seq_len, ctx_len, num_layers,
 * mxint8_kv_cache, mxfp6_matmul, num_cores, onnx and compile_dir; optional model_type
 * ("gpt_oss": its get_specializations) and enable_chunking.
 */
export function qeffQaicCompile(args: Record<string, unknown>): QeffQaicCompile {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_COMPILE + QEFF_CCL + QEFF_RULES, JSON.stringify(args)], { encoding: 'utf8' });
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
        extra = {}
        num_layers = cfg["num_hidden_layers"]
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "vision_size": vision_size, "vision_batch_size": batch_size, **extra},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": 1, "ctx_len": ctx_len, "vision_size": vision_size, "vision_batch_size": batch_size, **extra}]
elif fam in ("llava", "llava_next"):
    # QEfficient/transformers/models/llava{,_next}/modeling_llava{,_next}.py get_specializations
    vc = cfg["vision_config"]
    img_size = a["img_size"] or vc.get("image_size", 336)
    patch = vc["patch_size"]
    if fam == "llava":
        prefill_seq_len = a["prefill_seq_len"] or 592
        ctx_len = a["ctx_len"] or 1024
        vision_size = (img_size // patch) ** 2
        extra = {}
    else:
        prefill_seq_len = a["prefill_seq_len"] or 5500
        ctx_len = a["ctx_len"] or 6000
        h, w = a["height"] or 1109, a["width"] or 1610
        pins = cfg["image_grid_pinpoints"]
        # HF image_processing_utils.select_best_resolution
        best, max_eff, min_waste = None, 0, float("inf")
        for ph, pw in pins:
            scale = min(pw / w, ph / h)
            eff = min(int(w * scale) * int(h * scale), w * h)
            waste = pw * ph - eff
            if eff > max_eff or (eff == max_eff and waste < min_waste):
                max_eff, min_waste, best = eff, waste, (ph, pw)
        # HF modeling_llava_next.image_size_to_num_patches
        num_patches = len(range(0, best[0], img_size)) * len(range(0, best[1], img_size)) + 1
        # HF processing_llava_next._get_number_of_features (+ _get_unpadded_features), default strategy
        ph_, pw_ = img_size // patch, img_size // patch
        cur_h, cur_w = ph_ * (best[0] // img_size), pw_ * (best[1] // img_size)
        if w / h > cur_w / cur_h:
            new_h = int(round(h * (cur_w / w), 7))
            cur_h -= ((cur_h - new_h) // 2) * 2
        else:
            new_w = int(round(w * (cur_h / h), 7))
            cur_w -= ((cur_w - new_w) // 2) * 2
        vision_size = cur_h * cur_w + cur_h + ph_ * pw_ + 1 - 1
        extra = {"image_size_height": h, "image_size_width": w, "num_patches": num_patches}
    vision = [{"batch_size": batch_size, **extra, "max_num_images": 1, "img_size": img_size}]
    if fam == "llava_next":
        vision[0]["vision_size"] = vision_size  # our vision graph's pack_index (see qaic-vlm-specs-llava.ts)
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, **extra, "max_num_images": 1, "img_size": img_size, "vision_size": vision_size, "vision_batch_size": batch_size},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": "1", "ctx_len": ctx_len, **extra, "max_num_images": 1, "img_size": img_size, "vision_size": vision_size, "vision_batch_size": batch_size}]
    num_layers = cfg["text_config"]["num_hidden_layers"]
elif fam == "mistral3":
    # QEfficient/transformers/models/mistral3/modeling_mistral3.py get_specializations
    vc = cfg["vision_config"]
    img_size = a["img_size"] or vc["image_size"]
    prefill_seq_len = a["prefill_seq_len"] or 128
    patch, k = vc["patch_size"], cfg["spatial_merge_size"]
    vision_size = ((img_size // patch) * (img_size // patch)) * batch_size // (k * k)
    vision = [{"batch_size": batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "image_size": img_size, "vision_size": vision_size}]
    # our vision graph's symbols (see qaic-vlm-specs-mistral3.ts)
    vision[0].update({"image_height": img_size, "image_width": img_size, "image_tokens": vision_size // batch_size})
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "image_size": img_size, "vision_size": vision_size, "vision_batch_size": batch_size},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": "1", "ctx_len": ctx_len, "image_size": img_size, "vision_size": vision_size, "vision_batch_size": batch_size}]
    num_layers = cfg["text_config"]["num_hidden_layers"]
elif fam == "internvl":
    # QEfficient/transformers/models/internvl/modeling_internvl.py get_specializations (HF's config
    # gives image_size / patch_size as [h, w]; the remote-code config QEfficient reads, ints)
    vc = cfg["vision_config"]
    side = lambda x: x[0] if isinstance(x, list) else x
    num_patches = 13  # constants.INTERN_NUM_PATCHES
    prefill_seq_len = a["prefill_seq_len"] or 4096 - 256
    img_size = a["img_size"] or side(vc["image_size"])
    per_patch_embed_size = (img_size // side(vc["patch_size"]) * cfg["downsample_ratio"]) ** 2
    vision_size = int(batch_size * num_patches * per_patch_embed_size)
    vision = [{"batch_size": batch_size, "num_patches": num_patches, "img_size": img_size, "batched_num_patches": batch_size * num_patches}]
    vision[0]["vision_size"] = vision_size  # our vision graph's output rows (see qaic-vlm-specs-internvl.ts)
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "num_patches": num_patches, "img_size": img_size, "vision_size": vision_size, "vision_batch_size": 1},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": "1", "ctx_len": ctx_len, "num_patches": num_patches, "img_size": img_size, "vision_size": vision_size, "vision_batch_size": 1}]
    num_layers = cfg["text_config"]["num_hidden_layers"]
elif fam == "llama4":
    # QEfficient/transformers/models/llama4/modeling_llama4.py get_specializations (max_num_tiles not given: 17)
    max_num_tiles = 17
    prefill_seq_len = a["prefill_seq_len"] or 32
    chunk = cfg["text_config"].get("attention_chunk_size")
    chunk_ctx_len = min(ctx_len, chunk if chunk is not None else 8192)
    vc = cfg["vision_config"]
    img_size = a["img_size"] or vc["image_size"]
    downsample_ratio = int(round(1.0 / (vc["pixel_shuffle_ratio"] ** 2)))
    num_features_per_tile = int((img_size // vc["patch_size"]) * (img_size // vc["patch_size"]) // downsample_ratio)
    vision_size = num_features_per_tile * max_num_tiles
    vision = [{"batch_size": batch_size, "max_num_tiles": max_num_tiles, "img_size": img_size}]
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "max_num_tiles": max_num_tiles, "img_size": img_size, "vision_size": vision_size, "chunk_length": prefill_seq_len, "chunk_ctx_len": chunk_ctx_len},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": 1, "ctx_len": ctx_len, "max_num_tiles": max_num_tiles, "img_size": img_size, "vision_size": vision_size, "chunk_length": prefill_seq_len, "chunk_ctx_len": chunk_ctx_len}]
    # our language graph's 3-D vision_embeds [tiles, rows per tile, H] (see qaic-vlm-specs-llama4.ts)
    for s in lang:
        s.update({"vision_size": num_features_per_tile, "vision_batch_size": max_num_tiles})
    num_layers = cfg["text_config"]["num_hidden_layers"]
else:
    prefill_seq_len = a["prefill_seq_len"] or 32
    img_size = a["img_size"] or cfg["vision_config"]["image_size"]
    # modeling_gemma3.py get_specializations: vision_size = mm_tokens_per_image (deprecated) or 256
    vision_size = cfg.get("mm_tokens_per_image") or 256
    sw = cfg["text_config"]["sliding_window"]
    vision = [{"batch_size": batch_size, "img_size": img_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len}]
    lang = [{"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len, "sliding_window": sw, "img_size": img_size, "vision_size": vision_size, "vision_batch_size": batch_size},
            {"batch_size": full_batch_size if cb else batch_size, "seq_len": "1", "ctx_len": ctx_len, "sliding_window": sw, "img_size": img_size, "vision_size": vision_size, "vision_batch_size": batch_size}]
    num_layers = cfg["text_config"]["num_hidden_layers"]
# CCL (get_specializations with comp_ctx_lengths_prefill/decode from process_ccl_specializations):
# one prefill entry per prefill value, then one decode entry per decode value
if a.get("ccl"):
    ccl_p, ccl_d = validate_ccl_lists(list(a["ccl"][0]), list(a["ccl"][1]), ctx_len, prefill_seq_len)
    lang = [{**lang[0], "comp_ctx_lengths": c} for c in ccl_p] + [{**lang[1], "comp_ctx_lengths": c} for c in ccl_d]
n_prefill = len(lang) // 2 if not a.get("ccl") else len(ccl_p)
for i, s in enumerate(lang):
    if cb:
        s["full_batch_size"] = kv_cache_batch_size
    else:
        s["batch_size"] = kv_cache_batch_size
    if i < n_prefill and full_batch_size:
        s["full_batch_exec_size"] = full_batch_size
# modeling_auto.py _QEffAutoModelForImageTextToTextDualQPC.compile (main ebf55e81): prefill_only keeps the
# prefill slice (one per CCL prefill value) for lang_prefill_qpc_path; lang_model._compile gets no prefill_only
if a.get("prefill_only"):
    lang = lang[: len(ccl_p)] if a.get("ccl") else lang[:1]
vision_output_names = ["vision_embeds"] + (["deepstack_features"] if fam == "qwen3_vl_moe" else [])
lang_output_names = ["logits"]
for i in range(num_layers):
    for kv in ["key", "value"]:
        lang_output_names.append(f"past_{kv}.{i}_RetainedState")
lang_output_names.insert(1, "vision_embeds_RetainedState")
lang_output_names.insert(2, "image_idx_output")
if fam == "qwen3_vl_moe":
    lang_output_names.insert(2, "deepstack_features_RetainedState")
if a.get("sampler"):
    # modeling_auto.py dual-QPC export: logits renamed next_tokens, then sampler_utils.py
    # get_sampling_inputs_and_outputs appends the two penalty buffers' retained states
    lang_output_names[lang_output_names.index("logits")] = "next_tokens"
    lang_output_names += ["past_repetition_penalty_buffer_RetainedState", "past_presence_penalty_buffer_RetainedState"]
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
 * mxfp6_matmul, continuous_batching, full_batch_size, ccl ([prefill, decode] or absent), sampler
 * (true or absent), prefill_only (true or absent), compiler, and onnx / compile_dir per graph.
 */
export function qeffVlmQaicCompile(args: Record<string, unknown>): Record<'vision' | 'language', QeffQaicCompile> {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_COMPILE + QEFF_CCL + QEFF_VLM_RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<'vision' | 'language', QeffQaicCompile>;
}

const QEFF_DISAGG_MDP = `
import bisect, json, sys
import onnx
a = json.loads(sys.argv[1])
_NEVER_FOLD = frozenset({"Loop", "Const", "Identity", "If", "DequantizeLinear"})
def _get_compiler_folded_nodes(graph):
    const_values = {init.name for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            const_values.update(out for out in node.output if out)
    foldable_nodes = set()
    while True:
        changed = False
        for node in graph.node:
            if not node.name or node.name in foldable_nodes:
                continue
            if node.op_type in _NEVER_FOLD or not node.input:
                continue
            if all(inp in const_values for inp in node.input if inp):
                foldable_nodes.add(node.name)
                const_values.update(out for out in node.output if out)
                changed = True
        if not changed:
            break
    return foldable_nodes
def _get_layer_num(node_name):
    for part in node_name.split("/"):
        if part.startswith("layers."):
            suffix = part[len("layers."):]
            if suffix.isdigit():
                return int(suffix)
        elif part.startswith("h."):
            suffix = part[len("h."):]
            if suffix.isdigit():
                return int(suffix)
        elif part.startswith("layer_"):
            suffix = part[len("layer_"):]
            if suffix.isdigit():
                return int(suffix)
    return None
def _layer_partition_bounds(num_layers, num_partitions):
    base = num_layers // num_partitions
    remainder = num_layers % num_partitions
    sizes = [base] * num_partitions
    if remainder > 0 and num_partitions >= 2:
        if num_partitions == 2:
            sizes[0] += remainder
        else:
            num_middle = num_partitions - 2
            middle_fill = min(remainder, num_middle)
            first_fill = remainder - middle_fill
            mid_center = (1 + num_partitions - 2) // 2
            left, right, filled = mid_center, mid_center + 1, 0
            while filled < middle_fill:
                if left >= 1:
                    sizes[left] += 1
                    left -= 1
                    filled += 1
                if filled < middle_fill and right <= num_partitions - 2:
                    sizes[right] += 1
                    right += 1
                    filled += 1
            if first_fill > 0:
                sizes[0] += 1
    cumsum = 0
    bounds = []
    for sz in sizes[:-1]:
        cumsum += sz
        bounds.append(cumsum)
    return bounds
def generate_disagg_mdp_partition_config(onnx_path, num_devices, num_partitions, num_layers, num_cores=16):
    partition_bounds = _layer_partition_bounds(num_layers, num_partitions)
    model = onnx.load(onnx_path, load_external_data=False)
    folded_nodes = _get_compiler_folded_nodes(model.graph)
    partitions = [[] for _ in range(num_partitions)]
    current_layer_partition = 0
    seen_first_layer = False
    for node in model.graph.node:
        if not node.name:
            continue
        if node.name in folded_nodes:
            continue
        layer_num = _get_layer_num(node.name)
        if layer_num is not None:
            seen_first_layer = True
            partition_idx = bisect.bisect_right(partition_bounds, layer_num)
            current_layer_partition = partition_idx
        else:
            partition_idx = 0 if not seen_first_layer else current_layer_partition
        partitions[partition_idx].append(node.name)
    device_ids = list(range(num_devices))
    devices_per_partition = num_devices // num_partitions
    partition_objs = []
    for i, node_list in enumerate(partitions):
        assigned_devices = device_ids[i * devices_per_partition : (i + 1) * devices_per_partition]
        partition_objs.append({"name": f"Partition{i}", "nodeList": node_list,
                               "devices": [{"deviceId": dev_id, "numCores": num_cores} for dev_id in assigned_devices]})
    return {"connections": [{"devices": device_ids, "type": "p2p"}], "partitions": partition_objs}
if a.get("bounds"):
    print(json.dumps([_layer_partition_bounds(l, p) for l, p in a["bounds"]]))
else:
    print(json.dumps(generate_disagg_mdp_partition_config(a["onnx"], a["num_devices"], a["num_partitions"], a["num_layers"], a["num_cores"])))
`;

/**
 * QEfficient's `generate_disagg_mdp_partition_config` (ONNX strategy, `QEfficient/compile/mdp_generator.py`
 * at main ebf55e81, transcribed without its local-function branch: our graphs have none) run by
 * python3-onnx on `onnx`: the pipeline partition config as a plain object.
 */
export function qeffDisaggMdp(args: {
  onnx: string;
  num_devices: number;
  num_partitions: number;
  num_layers: number;
  num_cores: number;
}): unknown {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_DISAGG_MDP, JSON.stringify(args)], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as unknown;
}

/** QEfficient's `_layer_partition_bounds` for each `[num_layers, num_partitions]`. */
export function qeffLayerBounds(pairs: [number, number][]): number[][] {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_DISAGG_MDP, JSON.stringify({ bounds: pairs })], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as number[][];
}
