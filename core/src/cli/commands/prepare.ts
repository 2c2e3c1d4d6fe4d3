/**
 * `weight-spec prepare`: turn a checkpoint into the layout and dtype the graph expects
 * (dtype conversion, MoE stacking, fused splits, MXFP4 dequant, expert-parallel packing)
 * through the planned, RAM-budgeted pipeline in core/src/prepare. Prints the prepared
 * directory (last stdout line); an unchanged plan is a no-op and says so.
 */
import path from 'node:path';
import { UsageError } from '../../errors';
import { finalizeShards, parseShard, runPrepare, runShard, type PrepareProgress } from '../../prepare';
import { formatNonFinite } from '../../prepare/overflow';
import { PREPARE_DTYPES, type PrepareDtype } from '../../formats/dtype';
import { defineCommand, println } from '../command';
import { formatBytes } from '../../display';
import { createProgress } from '../progress';
import { CHECKPOINT_FILES, requireModelPath, requireOutDir, requirePath } from '../input-paths';
import { linkPreparedFolder } from '../../artifacts/prepared-link';

export const prepareCommand = defineCommand({
  name: 'prepare',
  summary: 'prepare a checkpoint (dtype, MoE layout) for a weight-free graph',
  synopsis: [
    'prepare --checkpoint <dir> --dtype float32|float16|bfloat16 [--out <dir>] [--max-ram-gb X] [--allow-overflow] [--moe-flavour expert_parallel --pipeline-stages P [--parallel-experts N]] [--spec <weight_spec.json>] [--keep-quantized]',
    'prepare … --shard i/N      (run shard i of N into the shared staging folder; then prepare … --finalize)',
    'prepare --checkpoint <base dir> --dtype … --lora <adapter dir> [--lora <adapter dir> …]   (LoRA adapters stacked beside the base)',
  ],
  details: [
    'Reads only headers to plan, then converts in worker threads within the RAM budget; each tensor is',
    'read once and written once. The output (default <parent>/<name>-prepared-<dtype>-<plan hash>) gets',
    'model.safetensors.index.json, the sidecars, .checkpoint_prepared.json and, last, .checkpoint_prepared.',
    'On a cluster (docs/PREPARE-CLUSTER.md): --shard i/N on every host, then --finalize once; the result is',
    'byte-identical to a single-host prepare of the same plan.',
    "With --spec, writes exactly the files and keys that spec names (ours or QEfficient's naming) into its files' folder,",
    "and links that folder into the spec's export (QEfficient's link), so the spec's own paths resolve.",
    '--lora (PEFT adapter folders, ids 1, 2, … in the order given; 0 is the base) adds lora-adapters.safetensors: each targeted',
    "Linear's <module>.lora_a_weights [N+1,1,in,R] and lora_b_weights [N+1,1,R,out] (R the largest r, scaling folded into B).",
  ],
  flags: {
    checkpoint: {
      type: 'string',
      placeholder: '<dir>',
      description: 'source safetensors checkpoint, or a Hub id org/name[@revision] in the local HF cache',
      required: true,
    },
    revision: { type: 'string', placeholder: '<rev>', description: 'branch, tag or commit of a Hub id (default main)' },
    dtype: { type: 'string', placeholder: '<dtype>', choices: PREPARE_DTYPES, description: 'target dtype', required: true },
    out: {
      type: 'string',
      placeholder: '<dir>',
      description: 'output directory (default <parent>/<name>-prepared-<dtype>-<hash> beside the source)',
    },
    'max-ram-gb': { type: 'number', placeholder: '<X>', description: 'RAM budget in GiB (default 80% of available)' },
    'moe-flavour': { type: 'string', placeholder: '<flavour>', choices: ['expert_parallel'], description: 'MoE prefill flavour' },
    'pipeline-stages': { type: 'int', placeholder: '<P>', description: 'pipeline stages (expert_parallel)' },
    'keep-quantized': {
      type: 'boolean',
      description: 'GPTQ/AWQ int4: keep the Linears packed, repacked for com.microsoft MatMulNBits (export --keep-quantized reads them)',
    },
    'allow-overflow': {
      type: 'boolean',
      description: 'keep values that become ±Inf/NaN (above 65504 in float16, FP8 NaN codes); counted per tensor in the manifest',
    },
    'parallel-experts': {
      type: 'int',
      placeholder: '<N>',
      description: 'experts per stage, N = E / P (expert_parallel; derived when omitted)',
    },
    shard: {
      type: 'string',
      placeholder: '<i/N>',
      description: 'run only the tasks of shard i of N (0 ≤ i < N ≤ 65536) into <out>.shards-<fingerprint>, recording them',
    },
    finalize: { type: 'boolean', description: 'commit the shards: check every task is present, write index, manifest, sentinel' },
    lora: {
      type: 'string',
      multiple: true,
      placeholder: '<adapter dir>',
      description:
        'a PEFT LoRA adapter of this checkpoint (repeat for several; ids 1, 2, … in order): stacked into lora-adapters.safetensors',
    },
    spec: {
      type: 'string',
      placeholder: '<weight_spec.json>',
      description: "write exactly the files, keys and shapes this spec's inputs name (default --out: the spec's files' folder)",
    },
  },
  positionals: { min: 0, max: 0, names: [] },
  async run(args, io) {
    const f = args.flags;
    const gb = f['max-ram-gb'];
    if (gb !== undefined && !(gb > 0)) throw new UsageError('prepare: --max-ram-gb must be a positive number');
    if (f.shard !== undefined && f.finalize) throw new UsageError('prepare: --shard and --finalize are separate steps; give one of them');
    const shard = f.shard !== undefined ? parseShard(f.shard) : undefined;
    // the sharded path refuses non-finite values (the executor's check) but does not yet carry
    // the per-tensor counts into the finalized manifest: the flag is refused there, not ignored
    if (f.spec !== undefined && (shard || f.finalize))
      throw new UsageError('prepare: --spec is not supported with --shard / --finalize yet; prepare a spec layout on one host');
    if (f['allow-overflow'] && (shard || f.finalize))
      throw new UsageError(
        'prepare: --allow-overflow is not supported with --shard / --finalize yet; prepare on one host to keep non-finite values',
      );
    const opts = {
      checkpoint: requireModelPath(io.cwd, f.checkpoint, { env: io.env, revision: f.revision, exts: CHECKPOINT_FILES }).path,
      dtype: f.dtype as PrepareDtype,
      ...(f.out !== undefined ? { out: requireOutDir(io.cwd, f.out) } : {}),
      ...(gb !== undefined ? { budgetBytes: Math.floor(gb * 1024 ** 3) } : {}),
      ...(f['moe-flavour'] ? { moeFlavour: f['moe-flavour'] as 'expert_parallel' } : {}),
      ...(f['pipeline-stages'] !== undefined ? { pipelineStages: f['pipeline-stages'] } : {}),
      ...(f['parallel-experts'] !== undefined ? { parallelExperts: f['parallel-experts'] } : {}),
      ...(f['allow-overflow'] ? { allowOverflow: true } : {}),
      ...(f['keep-quantized'] ? { keepQuantized: true } : {}),
      ...(f.spec !== undefined ? { spec: requirePath(io.cwd, f.spec, 'file') } : {}),
      ...(f.lora.length ? { lora: f.lora.map((d) => requirePath(io.cwd, d, 'dir')) } : {}),
    };
    if (f.finalize) {
      const r = await finalizeShards(opts);
      const fp = r.plan.fingerprint.slice(0, 12);
      println(
        io.stdout,
        r.upToDate
          ? `prepare: up to date (fingerprint ${fp}, nothing changed)`
          : `prepare: finalized ${r.tasks} tasks (${formatBytes(r.plan.totalBytes)}, ${r.plan.dtype}; fingerprint ${fp})`,
      );
      println(io.stdout, r.plan.outDir);
      return 0;
    }
    const progress = createProgress('prepare', { unit: 'bytes', stream: io.stderr });
    const onProgress = (p: PrepareProgress) => progress.update(p.bytesDone, p.bytesTotal, `${p.tasksDone}/${p.tasksTotal} tasks`);
    if (shard) {
      let r;
      try {
        r = await runShard({ ...opts, shard, onProgress });
      } catch (e) {
        progress.fail();
        throw e;
      }
      progress.fail();
      const what = r.upToDate
        ? `the output is already prepared (fingerprint ${r.plan.fingerprint.slice(0, 12)}); nothing to do`
        : `${r.written} of ${r.assigned} tasks written, ${r.skipped} already present (${formatBytes(r.bytes)})`;
      println(io.stdout, `prepare: shard ${shard.i}/${shard.n}: ${what}`);
      println(io.stdout, r.staging);
      return 0;
    }
    let result;
    try {
      result = await runPrepare({ ...opts, onProgress });
    } catch (e) {
      progress.fail();
      throw e;
    }
    const conv = result.conversion;
    if (conv) {
      const what = conv.converted
        ? `converted ${conv.binFiles.length} .bin file(s) (${conv.tensors} tensors)`
        : `reused the conversion of ${conv.binFiles.length} .bin file(s)`;
      println(io.stdout, `prepare: ${conv.from} has no safetensors: ${what} to ${conv.to} (allow-listed unpickler, no code run)`);
    }
    const ms = result.ms < 10 ? result.ms.toFixed(1) : result.ms.toFixed(0);
    const fp = result.fingerprint.slice(0, 12);
    if (result.upToDate) {
      progress.fail();
      println(io.stdout, `prepare: up to date (fingerprint ${fp}, nothing changed; ${ms} ms)`);
    } else {
      progress.done(`${formatBytes(result.plan.totalBytes)} in ${result.plan.tasks.length} tasks`);
      const tensors = result.plan.outputs.size;
      println(
        io.stdout,
        `prepare: ${tensors} tensors (${formatBytes(result.plan.totalBytes)}, ${result.plan.dtype}) in ${result.plan.tasks.length} files, budget ${formatBytes(result.budgetBytes)} (fingerprint ${fp}; ${ms} ms)`,
      );
    }
    const lora = result.plan.lora;
    if (lora)
      println(
        io.stdout,
        `prepare: ${lora.adapters.length} LoRA adapter(s) stacked for ${lora.modules.length} Linears, rank ${lora.rank}: ${lora.adapters.map((a) => `${a.id} = ${a.dir}`).join(', ')} (0 = base)`,
      );
    const kept = Object.keys(result.nonFinite).length;
    if (kept > 0)
      println(io.stdout, `prepare: kept ±Inf/NaN values (--allow-overflow) in ${kept} tensor(s): ${formatNonFinite(result.nonFinite)}`);
    if (opts.spec) {
      // QEfficient's link from the spec's export to the folder: the spec's own paths resolve.
      const l = await linkPreparedFolder(path.dirname(opts.spec), result.outDir);
      if ('linked' in l && l.made) println(io.stdout, `prepare: linked ${l.linked} -> ${result.outDir}`);
    }
    println(io.stdout, result.outDir);
    return 0;
  },
});
