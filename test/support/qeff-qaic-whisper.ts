/**
 * QEfficient's qaic-compile rules for Whisper, transcribed to Python (json.dumps does the JSON,
 * not our writer), for core/test/compile/qaic-recording-whisper.test.ts. Sources
 * (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81):
 * `QEfficient/transformers/models/whisper/modeling_whisper.py`
 * `QEffWhisperForConditionalGeneration.get_specializations` / `get_output_names`,
 * `QEfficient/transformers/models/modeling_auto.py` `QEFFAutoModelForSpeechSeq2Seq.compile`
 * (CUSTOM_IO_DTYPE_MAP over config.torch_dtype, `_add_retained_state_custom_io`, the options) and
 * `QEfficient/base/modeling_qeff.py` `_compile` (the command, `to_named_specializations` with
 * `_graph_name`, the bfloat16 rule that leaves custom_io.yaml off the command; the hashed
 * parameters in the release/v1.22.8.0 layout the other qaic parity tests use).
 *
 * QEfficient compiles ONE graph; weight-spec exports two. The split, our deliberate difference,
 * is applied here in the open (SPLIT below): the encoder graph takes the `Encoder` entry, the
 * decoder both; each keeps the symbols its own dims name plus `encoder_seq_len` (the decoder's
 * encoder_hidden_states length: encoder_ctx_len when feature_len > 1, else 1); custom IO gains
 * `encoder_hidden_states` (it crosses between the graphs) and keeps the names each graph has;
 * `retained_state` goes to the graph with states.
 */
import { spawnSync } from 'node:child_process';

const RULES = `
import json, sys
a = json.loads(sys.argv[1])
dump = lambda o: json.dumps(o, indent=4, separators=(",", ":"), sort_keys=True)
cfg = json.load(open(a["config"]))
# get_specializations(batch_size, encoder_ctx_len, ctx_len)
encoder_ctx_len = a["encoder_ctx_len"]
if encoder_ctx_len is None and "max_source_positions" in cfg:
    encoder_ctx_len = cfg["max_source_positions"]
elif encoder_ctx_len is None:
    encoder_ctx_len = 1500
feature_len = encoder_ctx_len * 2
batch_size = a["batch_size"]
ctx_len = a["ctx_len"] if a["ctx_len"] is not None else 150
specializations = [
    {"_graph_name": "Encoder", "batch_size": batch_size, "seq_len": 1, "encoder_ctx_len": encoder_ctx_len, "decoder_ctx_len": ctx_len, "feature_len": feature_len},
    {"_graph_name": "Decode", "batch_size": batch_size, "seq_len": 1, "encoder_ctx_len": encoder_ctx_len, "decoder_ctx_len": ctx_len, "feature_len": 1},
]
# compile(): custom IO and options
CUSTOM_IO_DTYPE_MAP = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float16"}
target_dtype = cfg.get("torch_dtype", "float32")
kv_cache_dtype = CUSTOM_IO_DTYPE_MAP[target_dtype]
output_names = ["logits"]
for i in range(cfg["num_hidden_layers"]):
    for self_cross in ["self", "cross"]:
        for kv in ["key", "value"]:
            output_names.append(f"past_{kv}_{self_cross}.{i}_RetainedState")
custom_io = {}
custom_io["input_features"] = kv_cache_dtype
for output_name in output_names:
    if output_name.endswith("_RetainedState"):
        custom_io[output_name[: -len("_RetainedState")]] = kv_cache_dtype
        custom_io[output_name] = kv_cache_dtype
options = dict(retained_state=True, convert_to_fp16=(kv_cache_dtype == "float16"), mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=a["num_cores"])

# SPLIT (weight-spec's two graphs; see the TS header)
def split(g):
    dims = set(g["dims"])
    entries = [specializations[0]] if g["role"] == "encoder" else specializations
    specs = []
    for s in entries:
        t = dict(s, encoder_seq_len=(encoder_ctx_len if s["feature_len"] > 1 else 1))
        specs.append({k: v for k, v in t.items() if k == "_graph_name" or k in dims})
    io = {}
    for k, v in custom_io.items():
        io[k] = v
        if k == "input_features":
            io["encoder_hidden_states"] = v
    if "input_features" not in custom_io:
        io["encoder_hidden_states"] = kv_cache_dtype
    io = {k: v for k, v in io.items() if k in g["names"]}
    opts = {k: v for k, v in options.items() if k != "retained_state" or g["has_states"]}
    return specs, io, opts

# _compile
def qeff_compile(g):
    specs, io, opts = split(g)
    command = [a["compiler"], "-aic-hw", "-aic-hw-version=ai100", f"-m={g['onnx']}"]
    for key, value in opts.items():
        option = "-" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                command.append(option)
            continue
        command.append(f"{option}={value}")
    # compile_hash_params of _compile on main ebf55e81 (mdp_num_partitions, mdp_strategy and prefill_only included)
    hashed = {"command": command, "specializations": specs, "custom_io": io, "mdp_ts_num_devices": 1, "mdp_num_partitions": 1,
              "mdp_strategy": "onnx", "mdp_ts_json": None, "num_speculative_tokens": None, "prefill_only": None}
    named = [{"name": s["_graph_name"], "symbols": {k: str(v) for k, v in s.items() if k != "_graph_name"}} for s in specs]
    command.append(f"-network-specialization-config={g['compile_dir']}/specializations.json")
    model_in_bfloat16 = target_dtype == "bfloat16"
    pkv_in_bfloat16 = any("past_" in k and "bfloat16" in v for k, v in io.items())
    if not (model_in_bfloat16 and pkv_in_bfloat16):
        command.append(f"-custom-IO-list-file={g['compile_dir']}/custom_io.yaml")
    command.append(f"-aic-binary-dir={g['compile_dir']}/qpc")
    return {"argv": command[1:], "specializations": dump({"specializations": named}),
            "custom_io": "".join(f" - IOName: {n}\\n   Precision: {d}\\n\\n" for n, d in io.items()),
            "hashed": dump(hashed), "custom_io_passed": not (model_in_bfloat16 and pkv_in_bfloat16)}

print(json.dumps({g["role"]: qeff_compile(g) for g in a["graphs"]}))
`;

/** What QEfficient's rules (split over our two graphs) give for one graph. */
export interface QeffWhisperCompile {
  argv: string[];
  specializations: string;
  custom_io: string;
  hashed: string;
  custom_io_passed: boolean;
}

/** One graph of the export as the rules need it: role, its dim names and I/O names, its ONNX and compile dir. */
export interface WhisperGraphArgs {
  role: 'encoder' | 'decoder';
  dims: string[];
  names: string[];
  has_states: boolean;
  onnx: string;
  compile_dir: string;
}

/**
 * Runs the rules for `args`: config (the model's config.json), batch_size, ctx_len (null: 150),
 * encoder_ctx_len (null: max_source_positions), mxfp6_matmul, num_cores, compiler, graphs.
 */
export function qeffWhisperQaicCompile(
  args: Record<string, unknown> & { graphs: WhisperGraphArgs[] },
): Record<'encoder' | 'decoder', QeffWhisperCompile> {
  const r = spawnSync('/usr/bin/python3', ['-c', RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<'encoder' | 'decoder', QeffWhisperCompile>;
}
