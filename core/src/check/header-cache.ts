/**
 * Safetensors headers and ONNX summaries, cached by path + size + mtime. The language server
 * keeps one cache for its lifetime, so re-checking a spec on every keystroke reads no file
 * twice unless it changed on disk; a failed read is cached too (same key), so a corrupt
 * file is not re-parsed on every keystroke either.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { statStamp } from '../file-stamp';
import { readSafetensorsHeader, type SafetensorsHeader } from '../formats/safetensors';
import { summarizeOnnx, type OnnxSummary } from '../formats/onnx';

type Entry<T> = { stamp: string; value?: T; error?: unknown };

/** Cache of parsed headers; share one instance between checks to avoid re-reading files. */
export class HeaderCache {
  private readonly headers = new Map<string, Entry<SafetensorsHeader>>();
  private readonly summaries = new Map<string, Entry<OnnxSummary>>();

  constructor(
    /** Entries kept per kind before the oldest are dropped. */
    private readonly capacity = 4096,
  ) {}

  /** The safetensors header of `file` (absolute); rejects with the reader's error. */
  header(file: string): Promise<SafetensorsHeader> {
    return this.get(this.headers, file, (f, st) => readSafetensorsHeader(f, st));
  }

  /** The metadata-only summary of an ONNX file (absolute). */
  onnx(file: string): Promise<OnnxSummary> {
    return this.get(this.summaries, file, (f) => summarizeOnnx(f));
  }

  /** Forgets everything (e.g. when the server's roots change). */
  clear(): void {
    this.headers.clear();
    this.summaries.clear();
  }

  private async get<T>(map: Map<string, Entry<T>>, file: string, load: (f: string, st: Stats) => Promise<T>): Promise<T> {
    const st = await stat(file);
    const stamp = statStamp(st);
    const hit = map.get(file);
    if (hit && hit.stamp === stamp) {
      if (hit.error !== undefined) throw hit.error;
      return hit.value as T;
    }
    const entry: Entry<T> = { stamp };
    try {
      entry.value = await load(file, st);
    } catch (err) {
      entry.error = err;
    }
    map.delete(file);
    map.set(file, entry);
    if (map.size > this.capacity) map.delete(map.keys().next().value as string);
    if (entry.error !== undefined) throw entry.error;
    return entry.value as T;
  }
}

/** A process-wide cache for callers that do not bring their own (the CLI). */
export const defaultHeaderCache = new HeaderCache();
