/**
 * `weight-spec compile <export dir>`: bind the weight-free graph to its weights (ONNX Runtime
 * here, qaic-compile where the SDK exists) and record it in `<export dir>/compile.json`.
 * An unchanged input finishes at once and says so.
 */
import path from 'node:path';
import { defineCommand, println } from '../command';
import { formatBytes } from '../../display';
import { requirePath } from '../input-paths';
import { UsageError } from '../../errors';
import { parseLengths } from './export';

export const compileCommand = defineCommand({
  name: 'compile',
  summary: 'bind an exported graph to its (prepared) weights',
  synopsis: [
    'compile <export dir> [--backend ort|qaic] [--prepared <dir>]',
    'compile <export dir> --backend qaic [--dry-run] [--num-cores N] [--mxfp6-matmul] [--mxint8-kv-cache] [--ctx-len N] [--prefill-seq-len N] [--qaic-option name=value]',
    '        [--num-devices N [--pipeline-partitions P]]',
    'compile <VLM export dir> --backend qaic [--img-height PX --img-width PX | --img-size PX] [...]',
    'compile <embedding export dir> --backend qaic [--seq-len 32,64,…] [--batch-size B] [...]',
  ],
  details: [
    'ort: writes a bound ONNX into the prepared directory whose initializers point into the prepared',
    'safetensors files (no weight byte is copied); `weight-spec run <export dir>` runs it.',
    "qaic: runs /opt/qti-aic/exec/qaic-compile with QEfficient's command line (WEIGHT_SPEC_QAIC_COMPILE",
    'overrides the binary); --dry-run prints the command and the files it would write, and writes nothing.',
    'A VLM export (vlm.json) or a Whisper export (whisper.json + encoder/ + decoder/) compiles both of its graphs;',
    "Whisper's qaic specializations are QEfficient's Encoder/Decode entries (decoder_ctx_len from --ctx-len, default 150).",
  ],
  flags: {
    backend: { type: 'string', placeholder: '<backend>', choices: ['ort', 'qaic'], description: 'compiler backend (default ort)' },
    prepared: { type: 'string', placeholder: '<dir>', description: 'prepared checkpoint to bind' },
    force: { type: 'boolean', description: 'recompile even when nothing changed' },
    'no-verify': { type: 'boolean', description: 'ort: do not load the bound model in ONNX Runtime at compile time' },
    'link-shards': {
      type: 'boolean',
      description: 'ort: hard-link the shards into <export dir>/compiled/ instead of writing into the prepared directory',
    },
    'keep-names': {
      type: 'boolean',
      description: 'ort: keep node names, value names and every Constant node in the bound model (default: slimmed for running)',
    },
    'dry-run': { type: 'boolean', description: 'qaic: print the qaic-compile command, run nothing' },
    'num-cores': { type: 'int', placeholder: '<N>', description: 'qaic: -aic-num-cores (default 16)' },
    'mxfp6-matmul': { type: 'boolean', description: 'qaic: -mxfp6-matmul' },
    'mxint8-kv-cache': { type: 'boolean', description: 'qaic: KV cache IO in mxint8 (custom IO)' },
    'aic-hw-version': {
      type: 'string',
      placeholder: '<v>',
      description: 'qaic: -aic-hw-version (default: the first device by qaic-util -q; else ai100)',
    },
    'batch-size': { type: 'int', placeholder: '<B>', description: 'qaic: specialization batch_size' },
    'prefill-seq-len': {
      type: 'int',
      placeholder: '<N>',
      description: 'qaic: specialization seq_len of prefill (default 32; VLM: 128, Gemma 3: 32)',
    },
    'seq-len': {
      type: 'string',
      placeholder: '<N,…>',
      description: "qaic, embedding export: one Embedding specialization per sequence length (QEFFAutoModel's seq_len; default 32)",
    },
    'ctx-len': {
      type: 'int',
      placeholder: '<N>',
      description:
        "qaic: specialization ctx_len (default: the graph's, else 128; VLM: 4096, LLaVA 1024, LLaVA-NeXT 6000; Whisper decoder_ctx_len: 150)",
    },
    'full-batch-size': { type: 'int', placeholder: '<N>', description: 'qaic: continuous batching full_batch_size' },
    'img-height': {
      type: 'int',
      placeholder: '<px>',
      description:
        "qaic, Qwen / LLaVA-NeXT VLM export: image height the vision graph is compiled for (QEfficient's height; default 354, LLaVA-NeXT 1109)",
    },
    'img-width': {
      type: 'int',
      placeholder: '<px>',
      description:
        "qaic, Qwen / LLaVA-NeXT VLM export: image width the vision graph is compiled for (QEfficient's width; default 536, LLaVA-NeXT 1610)",
    },
    'img-size': {
      type: 'int',
      placeholder: '<px>',
      description:
        "qaic, Gemma 3 / LLaVA / Mistral 3 VLM export: square image size (QEfficient's img_size; default vision_config.image_size)",
    },
    'num-devices': {
      type: 'int',
      placeholder: '<N>',
      description:
        "qaic: devices to partition over (QEfficient's num_devices: a tensor-slicing partition config, -mdp-load-partition-config)",
    },
    'pipeline-partitions': {
      type: 'int',
      placeholder: '<P>',
      description: "qaic: layer-balanced pipeline stages over the --num-devices (QEfficient's mdp_num_partitions; default 1)",
    },
    'qaic-option': {
      type: 'string',
      placeholder: '<name=value>',
      multiple: true,
      description: 'qaic: extra compiler option, a_b=v → -a-b=v, a_b → -a-b',
    },
  },
  positionals: { min: 1, max: 1, names: ['export dir'] },
  async run(args, io): Promise<number> {
    // loaded on use: `weight-spec prepare` (and --help) need not initialize this command's modules
    const [{ compile, shellLine }, { isVlmExport, readVlmManifest }, { isWhisperExport }, { readWhisperManifest }] = await Promise.all([
      import('../../compile'),
      import('../../run/vlm/vlm-runner'),
      import('../../run/whisper/whisper-runner'),
      import('../../artifacts/whisper-manifest'),
    ]);
    const f = args.flags;
    const exportDir = requirePath(io.cwd, args.positionals[0]!, 'dir', 'give the export directory');
    // a VLM export: compile both graphs (one prepared checkpoint; each artifact names its graph)
    if (isVlmExport(exportDir)) {
      const m = readVlmManifest(exportDir);
      for (const g of [m.graphs.vision, m.graphs.language]) {
        const code: number = await compileCommand.run({ ...args, positionals: [path.join(exportDir, g)] }, io);
        if (code !== 0) return code;
      }
      return 0;
    }
    // a Whisper export: compile the encoder and the decoder (one prepared checkpoint; each artifact names its graph)
    if (isWhisperExport(exportDir)) {
      const m = readWhisperManifest(exportDir);
      for (const g of [m.graphs.encoder, m.graphs.decoder]) {
        const code: number = await compileCommand.run({ ...args, positionals: [path.join(exportDir, g)] }, io);
        if (code !== 0) return code;
      }
      return 0;
    }
    const backend = (f.backend ?? 'ort') as 'ort' | 'qaic';
    const img = (['img-height', 'img-width', 'img-size'] as const).filter((k) => f[k] !== undefined);
    if (img.length && backend !== 'qaic')
      throw new UsageError(`compile: --${img[0]} sizes the qaic specializations of a VLM export; it needs --backend qaic`);
    if (f['seq-len'] !== undefined && backend !== 'qaic')
      throw new UsageError('compile: --seq-len lists the qaic specializations of an embedding export; it needs --backend qaic');
    const res = await compile(exportDir, {
      backend,
      prepared: f.prepared ? requirePath(io.cwd, f.prepared, 'dir', 'give the prepared checkpoint directory') : undefined,
      dryRun: f['dry-run'],
      force: f.force,
      links: f['link-shards'],
      keepNames: f['keep-names'],
      verify: !f['no-verify'],
      env: io.env,
      stderr: io.stderr,
      log: (l) => println(io.stderr, l),
      qaic: {
        numCores: f['num-cores'],
        mxfp6Matmul: f['mxfp6-matmul'] || undefined,
        mxint8KvCache: f['mxint8-kv-cache'] || undefined,
        aicHwVersion: f['aic-hw-version'],
        batchSize: f['batch-size'],
        prefillSeqLen: f['prefill-seq-len'],
        ctxLen: f['ctx-len'],
        fullBatchSize: f['full-batch-size'],
        ...(f['seq-len'] !== undefined ? { seqLens: parseLengths(f['seq-len'], 'seq-len', 'compile') } : {}),
        imgHeight: f['img-height'],
        imgWidth: f['img-width'],
        imgSize: f['img-size'],
        extra: f['qaic-option'],
        ...(f['num-devices'] !== undefined ? { numDevices: f['num-devices'] } : {}),
        ...(f['pipeline-partitions'] !== undefined ? { pipelinePartitions: f['pipeline-partitions'] } : {}),
      },
    });
    const ms = `${res.ms.toFixed(res.ms < 10 ? 1 : 0)} ms`;
    const rec = res.record;
    if (res.dryRun) {
      // the exact command, then each file it names, as it would be written
      println(io.stdout, shellLine(res.command!));
      for (const f of res.files ?? []) {
        println(io.stdout, `--- ${f.path}`);
        io.stdout.write(f.text.endsWith('\n') ? f.text : `${f.text}\n`);
      }
      return 0;
    }
    const artifact = rec.backend === 'ort' ? rec.artifacts.model! : rec.artifacts.qpc!;
    if (res.upToDate) {
      println(io.stdout, `compile: up to date (fingerprint ${rec.fingerprint.slice(0, 12)}, nothing changed; ${ms}): ${artifact}`);
      return 0;
    }
    const s = rec.stats;
    const what = s
      ? `${s.initializers} weights (${formatBytes(s.weightBytes)}) bound in place, artifact ${formatBytes(s.artifactBytes)}`
      : 'qpc written';
    const why = res.changed[0] === 'forced' ? 'forced' : res.changed.length ? `${res.changed.join(', ')} changed` : 'first compile';
    println(io.stdout, `compile: ${rec.backend} → ${artifact} (${what}; ${why}; ${ms})`);
    if (res.linked) println(io.stdout, `compile: linked ${res.linked} (the spec's files resolve through it)`);
    return 0;
  },
});
