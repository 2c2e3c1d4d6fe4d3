/**
 * Runs a Whisper export (`<out>/whisper.json` + compiled `encoder/` and `decoder/`) with ONNX
 * Runtime, as QEfficient's `QEFFAutoModelForSpeechSeq2Seq.generate` does with its one graph: the
 * encoder once over the log-mel features, then the decoder over the prompt (the cross-attention
 * cache filled from the encoder output in that call), then one token per call with a
 * `[1, 1, d_model]` dummy encoder input (the cross cache kept) — greedy, stopping after
 * `eos_token_id` or N tokens. The logits of every call are kept: the prompt's rows and one row
 * per generated token but the last, as `run --dump-logits` writes them for text models.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError, UsageError } from '../../errors';
import { fromFloat32 } from '../../formats/float-convert';
import { parseWireModel } from '../../formats/onnx/wire-model';
import { TensorDataType } from '../../formats/onnx/types';
import { readWhisperManifest, type WhisperManifest } from '../../artifacts/whisper-manifest';
import { WHISPER_MANIFEST_FILE } from '../../spec/file-names';
import { readRegularFileSync } from '../../paths';
import { loadOrt, type OrtSession, type OrtTensor } from '../../ort/loader';
import { ortSessionOptions } from '../../ort/session-options';
import { resolveRunnable } from '../index';
import { argmax, logitRows } from '../runner';

/** True when `dir` is a Whisper export directory. */
export function isWhisperExport(dir: string): boolean {
  return fs.existsSync(path.join(dir, WHISPER_MANIFEST_FILE));
}

/** Log-mel features `[num_mel_bins][frames]` of one audio. */
export type MelFeatures = ArrayLike<number>[];

/** What one transcription gives. */
export interface WhisperResult {
  tokens: number[];
  /** Rows of prompt + tokens[:-1] (row t predicts token t+1). */
  logits: number[][];
  encoderMs: number;
  totalMs: number;
}

/** A loaded Whisper export. */
export interface WhisperRunner {
  readonly manifest: WhisperManifest;
  /** Greedy decode of up to `n` tokens after `prompt` (stops after eos). */
  transcribe(features: MelFeatures, prompt: number[], n: number): Promise<WhisperResult>;
  close(): Promise<void>;
}

const fixed = (d: number | string | undefined): number | undefined => (typeof d === 'number' && d > 0 ? d : undefined);

/** Opens both compiled graphs of the Whisper export in `dir`. */
export async function openWhisperRunner(
  dir: string,
  opts: { ortPath?: string; prepack?: boolean; ctxLen?: number } = {},
): Promise<WhisperRunner> {
  const m = readWhisperManifest(dir);
  const runnable = (g: string) => {
    const r = resolveRunnable(path.join(dir, g));
    // as for text models: a stale artifact is never run silently
    if (r.status?.state === 'stale')
      throw new PipelineError(`${path.join(dir, g)}: the compiled model is stale; run \`weight-spec compile ${dir}\` first`);
    return r.model;
  };
  const encModel = runnable(m.graphs.encoder);
  const decModel = runnable(m.graphs.decoder);
  const decInputs = new Map(parseWireModel(readRegularFileSync(decModel), decModel).inputs.map((i) => [i.name, i]));
  const selfKey = decInputs.get('past_key_self.0');
  if (!selfKey || !decInputs.has('encoder_hidden_states'))
    throw new PipelineError(`${decModel}: no past_key_self.0 / encoder_hidden_states input; not a weight-spec Whisper decoder`);
  const half = selfKey.elemType === TensorDataType.FLOAT16;
  const graphCtx = fixed(selfKey.dims[2]);
  const ort = loadOrt(opts.ortPath);
  const open = async (file: string): Promise<OrtSession> => {
    try {
      return await ort.InferenceSession.create(file, ortSessionOptions(opts.prepack));
    } catch (e) {
      throw new PipelineError(`${file}: ONNX Runtime cannot load it: ${(e as Error).message.split('\n')[0]}`);
    }
  };
  const encoder = await open(encModel);
  const decoder = await open(decModel);
  const run = async (s: OrtSession, file: string, feeds: Record<string, OrtTensor>) => {
    try {
      return await s.run(feeds);
    } catch (e) {
      throw new PipelineError(`${file}: inference failed: ${(e as Error).message.split('\n')[0]}`);
    }
  };
  const float = (v: Float32Array, dims: number[]) => {
    if (!half) return new ort.Tensor('float32', v, dims);
    const b = fromFloat32(v, 'F16');
    return new ort.Tensor('float16', new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2), dims);
  };
  const i64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map((x) => BigInt(x))), dims);
  const H = m.decoder_attention_heads;
  const hd = m.d_model / H;

  return {
    manifest: m,
    async transcribe(features, prompt, n) {
      const t0 = performance.now();
      if (prompt.length === 0) throw new UsageError('run: --decoder-input-ids needs at least one id (the start token)');
      const bad = prompt.find((x) => x >= m.vocab_size);
      if (bad !== undefined) throw new UsageError(`run: token id ${bad} is outside the vocabulary (${m.vocab_size})`);
      const frames = 2 * m.max_source_positions;
      if (features.length !== m.num_mel_bins || features.some((r) => r.length !== frames))
        throw new UsageError(`run: the input features must be [${m.num_mel_bins}, ${frames}] (num_mel_bins × 2·max_source_positions)`);
      const ctx = graphCtx ?? opts.ctxLen ?? Math.min(m.max_target_positions, prompt.length + n);
      if (prompt.length + Math.max(n - 1, 0) > ctx)
        throw new PipelineError(
          `${decModel}: ${prompt.length} prompt ids + ${n} new tokens do not fit the decoder cache (${ctx} positions)`,
        );
      const flat = new Float32Array(m.num_mel_bins * frames);
      features.forEach((r, k) => flat.set(Array.from(r), k * frames));
      const enc = (await run(encoder, encModel, { input_features: float(flat, [1, m.num_mel_bins, frames]) })).encoder_hidden_states!;
      const encoderMs = performance.now() - t0;
      const state: Record<string, OrtTensor> = Object.create(null) as Record<string, OrtTensor>;
      for (let i = 0; i < m.decoder_layers; i++)
        for (const kind of ['past_key_self', 'past_value_self', 'past_key_cross', 'past_value_cross']) {
          const dims = [1, H, kind.endsWith('_self') ? ctx : m.max_source_positions, hd];
          state[`${kind}.${i}`] = float(new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
        }
      const dummy = float(new Float32Array(m.d_model), [1, 1, m.d_model]);
      const step = async (ids: number[], start: number, encoderStates: OrtTensor) => {
        const out = await run(decoder, decModel, {
          ...state,
          input_ids: i64(ids, [1, ids.length]),
          position_ids: i64(
            ids.map((_, k) => start + k),
            [1, ids.length],
          ),
          encoder_hidden_states: encoderStates,
        });
        for (const name of Object.keys(state)) state[name] = out[`${name}_RetainedState`]!;
        return logitRows(out.logits!);
      };
      const rows = (await step(prompt, 0, enc)).map((r) => Array.from(r));
      const tokens: number[] = [];
      let next = argmax(Float32Array.from(rows[rows.length - 1]!));
      while (tokens.length < n) {
        tokens.push(next);
        if (next === m.eos_token_id || tokens.length === n) break;
        const row = (await step([next], prompt.length + tokens.length - 1, dummy))[0]!;
        rows.push(Array.from(row));
        next = argmax(row);
      }
      return { tokens, logits: rows, encoderMs, totalMs: performance.now() - t0 };
    },
    async close() {
      await encoder.release?.();
      await decoder.release?.();
    },
  };
}
