/**
 * `export --config <base> --lora <adapter> …`: what the LoRA graph takes from the plan. The
 * prepare planner reads and checks the adapters (`prepare/lora-plan.ts`: PEFT fields, base
 * folder, shapes) and lays out their stacked tensors; this turns that stack into the graph's
 * {@link LoraGraph}, its metadata and the export report's record of the adapters (which
 * `check` re-plans from, as it does the checkpoint).
 */
import { UsageError } from '../../errors';
import { SERVING_METADATA } from '../../artifacts/graph-metadata';
import type { LoraStack } from '../../prepare';
import type { LoraGraph } from '../blocks/lora';

/** Refuses `--lora` where the export cannot serve adapters (before any planning). */
export function checkLoraExport(o: { vlm: boolean; withCheckpoint: boolean; dir: string }): void {
  if (o.vlm) throw new UsageError('--lora is not supported for vision-language models yet (export the base without --lora)');
  if (!o.withCheckpoint)
    throw new UsageError(`--lora needs the base checkpoint in the model directory (${o.dir} has config.json but no safetensors)`);
}

/** The graph's view of the planned stack: slots (adapters + base), rank, targeted Linears by weight name. */
export function loraGraphOf(s: LoraStack): LoraGraph {
  return { slots: s.adapters.length + 1, rank: s.rank, modules: new Map(s.modules.map((m) => [`${m.module}.weight`, m])) };
}

/** The graph metadata naming the adapters (id k = adapters[k − 1]); `run` reads how many there are. */
export function loraMetadata(s: LoraStack): Record<string, string> {
  return { [SERVING_METADATA.lora]: JSON.stringify({ adapters: s.adapters.map((a) => a.dir), rank: s.rank }) };
}

/** The adapters as export-report.json records them (ids, folders, ranks, scalings). */
export function loraReport(s: LoraStack): { id: number; dir: string; r: number; scaling: number }[] {
  return s.adapters.map((a) => ({ id: a.id, dir: a.dir, r: a.r, scaling: a.scaling }));
}
