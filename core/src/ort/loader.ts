/**
 * Loads onnxruntime-node at call time, never at import: the CLI's other commands, the
 * language server and the extension must work without the (288 MB, native) package. An
 * explicit location (option, or `WEIGHT_SPEC_ORT_PATH`: the package directory or its entry
 * file) wins over normal module resolution, so the extension can point at a copy it ships.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { PipelineError } from '../errors';

/** The part of onnxruntime-node's API the runner uses. */
export interface OrtModule {
  InferenceSession: {
    create(path: string, options?: Record<string, unknown>): Promise<OrtSession>;
  };
  Tensor: new (type: string, data: unknown, dims: readonly number[]) => OrtTensor;
  /** onnxruntime-common's global settings (the environment logger's level). */
  env?: { logLevel?: string };
}

/** A session (onnxruntime-common's InferenceSession, as used here). */
export interface OrtSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release?(): Promise<void>;
}

/** A tensor (onnxruntime-common's Tensor, as used here). */
export interface OrtTensor {
  readonly type: string;
  readonly dims: readonly number[];
  readonly data: unknown;
}

let cached: { key: string; mod: OrtModule } | undefined;

function baseRequire(): NodeRequire {
  const here = typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js');
  return createRequire(here);
}

/**
 * Returns onnxruntime-node. `ortPath` (or env `WEIGHT_SPEC_ORT_PATH`) names the package
 * directory or file to load instead of resolving `onnxruntime-node`.
 * @throws PipelineError with one line saying how to install it
 */
export function loadOrt(ortPath?: string, env: NodeJS.ProcessEnv = process.env): OrtModule {
  const explicit = ortPath || env.WEIGHT_SPEC_ORT_PATH || undefined;
  const key = explicit ?? 'onnxruntime-node';
  if (cached?.key === key) return cached.mod;
  const req = baseRequire();
  let mod: OrtModule;
  try {
    mod = req(explicit ? path.resolve(explicit) : 'onnxruntime-node') as OrtModule;
  } catch (e) {
    const why = (e as Error).message.split('\n')[0];
    throw new PipelineError(
      explicit
        ? `cannot load ONNX Runtime from ${explicit} (WEIGHT_SPEC_ORT_PATH): ${why}`
        : 'onnxruntime-node is not installed: run `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0` (or set WEIGHT_SPEC_ORT_PATH)',
    );
  }
  if (!mod?.InferenceSession || !mod?.Tensor) throw new PipelineError(`${key}: not an onnxruntime-node module (no InferenceSession)`);
  // The environment logger is separate from the sessions'; silence it too (see session-options.ts).
  if (mod.env) mod.env.logLevel = 'fatal';
  cached = { key, mod };
  return mod;
}
