/**
 * QEfficient's qaic-compile rules for a causal LM, transcribed to Python (json.dumps does the
 * JSON, not our writer), for the qaic parity tests (qaic-qeff-parity, qaic-recording-parity):
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

const QEFF_RULES = `
import json, sys
a = json.loads(sys.argv[1])
COMPILER = [a["compiler"], "-aic-hw"]
batch_size, ctx_len, full_batch_size = a["batch_size"], a["ctx_len"], a["full_batch_size"]
prefill_seq_len = 1 if a["decode_only"] else a["prefill_seq_len"]
cb = a["continuous_batching"]
CCL_MIN_CTX_LEN = 1024
def validate_ccl_lists(ccl_prefill, ccl_decode, ctx_len, prefill_seq_len):
    ccl_prefill = [x if x >= CCL_MIN_CTX_LEN else CCL_MIN_CTX_LEN for x in ccl_prefill]
    ccl_decode = [x if x >= CCL_MIN_CTX_LEN else CCL_MIN_CTX_LEN for x in ccl_decode]
    if ccl_prefill[-1] < ctx_len - 1:
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
            val -= 1
            if val < 0:
                break
        if val >= 0:
            ccl_prefill.append(val)
    ccl_prefill.sort()
    return ccl_prefill, ccl_decode
kv_cache_batch_size = full_batch_size if full_batch_size else batch_size
def prefill_spec(ccl):
    s = {"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len}
    if ccl is not None:
        s["comp_ctx_lengths"] = ccl
    if cb:
        s["full_batch_size"] = kv_cache_batch_size
    else:
        s["batch_size"] = kv_cache_batch_size
    if full_batch_size:
        s["full_batch_exec_size"] = full_batch_size
    return s
def decode_spec(ccl):
    if prefill_seq_len == 1 and not cb:
        return None
    s = {"batch_size": full_batch_size if cb else batch_size, "seq_len": 1, "ctx_len": ctx_len}
    if ccl is not None:
        s["comp_ctx_lengths"] = ccl
    if cb:
        s["full_batch_size"] = kv_cache_batch_size
    else:
        s["batch_size"] = kv_cache_batch_size
    return s
specializations = []
if a["ccl"]:
    ccl_prefill, ccl_decode = validate_ccl_lists(list(a["ccl"][0]), list(a["ccl"][1]), ctx_len, prefill_seq_len)
    specializations += [prefill_spec(c) for c in ccl_prefill]
    specializations += [d for d in (decode_spec(c) for c in ccl_decode) if d]
else:
    specializations.append(prefill_spec(None))
    d = decode_spec(None)
    if d:
        specializations.append(d)
custom_io = {}
kv_dtype = "mxint8" if a["mxint8_kv_cache"] else "float16"
for i in range(a["num_layers"]):
    for kv in ["key", "value"]:
        custom_io[f"past_{kv}.{i}"] = kv_dtype
        custom_io[f"past_{kv}.{i}_RetainedState"] = kv_dtype
compiler_options = dict(retained_state=True, convert_to_fp16=True, mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=a["num_cores"])
command = COMPILER + [f"-aic-hw-version={a['hw']}"] + [f"-m={a['onnx']}"]
for key, value in compiler_options.items():
    option = "-" + key.replace("_", "-")
    if isinstance(value, bool):
        if value:
            command.append(option)
        continue
    command.append(f"{option}={value}")
compile_hash_params = {"command": command, "specializations": specializations, "custom_io": custom_io,
                       "mdp_ts_num_devices": 1, "mdp_ts_json": None, "num_speculative_tokens": None}
names = [("Prefill" if int(s["seq_len"]) > 1 else "Decode") for s in specializations]
names = [f"{n}_{names[:i].count(n)}" if names.count(n) > 1 else n for i, n in enumerate(names)]
named = [{"name": n, "symbols": {k: str(v) for k, v in s.items()}} for n, s in zip(names, specializations)]
compile_dir = a["compile_dir"]
dump = lambda o: json.dumps(o, indent=4, separators=(",", ":"), sort_keys=True)
spec_text = dump({"specializations": named})
command.append(f"-network-specialization-config={compile_dir}/specializations.json")
io_text = "".join(f" - IOName: {n}\\n   Precision: {d}\\n\\n" for n, d in custom_io.items())
command.append(f"-custom-IO-list-file={compile_dir}/custom_io.yaml")
command.append(f"-aic-binary-dir={compile_dir}/qpc")
print(json.dumps({"command": command, "argv": command[1:], "specializations": spec_text, "custom_io": io_text, "hashed": dump(compile_hash_params)}))
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
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as QeffQaicCompile;
}
