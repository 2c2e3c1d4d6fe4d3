/**
 * A spec checked again and again as it is edited (the language server keeps one per open
 * document). The same passes as {@link checkSpec}; what a session adds is reuse: an edit
 * inside one input's name or key patches the previous parse instead of re-parsing the whole
 * document, and headers come from the shared {@link HeaderCache} (re-read only when a file's
 * size, mtime or inode changed). So a one-key edit of a 20 000-input spec re-validates in
 * milliseconds while reporting exactly what `weight-spec check` reports for the same text.
 */
import { parseSpecText, type ParsedSpec } from '../spec/parse';
import { patchParsedSpec } from '../spec/patch';
import { checkParsedSpec, type CheckRun } from './check-spec';
import type { CheckOptions } from './context';

/** Options of a session: those of {@link checkSpec} without the per-check signal. */
export type SessionOptions = Omit<CheckOptions, 'signal'>;

/** Repeated checks of one spec file's (possibly unsaved) text. */
export class SpecCheckSession {
  private text?: string;
  private parsed?: ParsedSpec;
  /** How the last parse was obtained (for tests and benchmarks). */
  lastParse: 'full' | 'patched' | 'same' | undefined;
  /** The most recent completed check. */
  last?: CheckRun & { text: string };

  constructor(
    readonly specFile: string,
    public options: SessionOptions = {},
  ) {}

  /**
   * The parse of `text`: the previous one when the text is unchanged, patched when the edit
   * is a plain change of one input's name or key, else a full parse. Synchronous, so the
   * session's text and parse always agree.
   */
  parse(text: string): ParsedSpec {
    if (this.parsed && this.text === text) {
      this.lastParse = 'same';
      return this.parsed;
    }
    let parsed: ParsedSpec | undefined;
    if (this.parsed && this.text !== undefined) {
      try {
        parsed = patchParsedSpec(this.parsed, this.text, text)?.parsed;
      } catch {
        parsed = undefined; // a patch bug must not break checking: fall back to parsing
      }
    }
    this.lastParse = parsed ? 'patched' : 'full';
    this.parsed = parsed ?? parseSpecText(text, this.specFile);
    this.text = text;
    return this.parsed;
  }

  /**
   * Follows an edit cheaply: patches the parse when `text` differs from the session's text by
   * a plain name/key edit, and does nothing otherwise (the next {@link parse} parses then).
   * Called on every keystroke so that each patch sees one edit, not several accumulated ones.
   */
  advance(text: string): boolean {
    if (!this.parsed || this.text === undefined || this.text === text) return false;
    try {
      const r = patchParsedSpec(this.parsed, this.text, text);
      if (!r) return false;
      this.parsed = r.parsed;
      this.text = text;
      return true;
    } catch {
      return false;
    }
  }

  /** Checks `text`; rejects only when `signal` aborts (a newer edit superseded this one). */
  async check(text: string, signal?: AbortSignal): Promise<CheckRun> {
    const parsed = this.parse(text);
    const run = await checkParsedSpec(this.specFile, parsed, { ...this.options, signal });
    signal?.throwIfAborted();
    // A patch may have changed the parse since (a newer text): keep only consistent results.
    if (this.text === text) this.last = { ...run, text };
    return run;
  }

  /** Forgets the cached parse (e.g. after a failure). */
  reset(): void {
    this.text = undefined;
    this.parsed = undefined;
    this.last = undefined;
  }
}
