/**
 * Progress display for long CLI work (prepare, export, compile). On a terminal it redraws
 * one bar line on stderr (at most ~10 times a second); when stderr is a pipe or a file (CI
 * logs, the extension's task output) it prints a plain line every few seconds instead, so
 * logs stay readable and no control characters end up in them. stdout is never touched.
 */
import { formatBytes } from '../display';

/** A running progress display. */
export interface Progress {
  /** Sets the absolute amount done (and the total, when it becomes known). */
  update(done: number, total?: number, detail?: string): void;
  /** Adds `n` (default 1) to the amount done. */
  tick(n?: number, detail?: string): void;
  /** Prints a message above the bar without breaking it. */
  log(line: string): void;
  /** Ends the display with a final line (`label: done …`). */
  done(summary?: string): void;
  /** Ends the display after a failure (clears the bar, prints nothing else). */
  fail(): void;
}

/** Where progress is drawn (a command's `io.stderr`). */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

function isStream(x: ProgressOptions | ProgressStream): x is ProgressStream {
  return typeof (x as { write?: unknown }).write === 'function';
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  total?: number;
  /** `bytes` shows sizes (KiB/MiB/GiB); `items` plain counts. */
  unit?: 'bytes' | 'items';
  stream?: ProgressStream;
  /** Interval between plain lines when not on a terminal (default 5 s). */
  plainIntervalMs?: number;
  /** Clock for tests. */
  now?: () => number;
}

/**
 * Starts a progress display for `label`, drawing to stderr (or the given stream /
 * `opts.stream`, e.g. a command's `io.stderr`): a bar when the
 * stream is a TTY (and `WEIGHT_SPEC_PROGRESS` is not `plain`), periodic lines otherwise
 * (`WEIGHT_SPEC_PROGRESS=off` silences it; `WEIGHT_SPEC_PROGRESS_INTERVAL_MS` sets the plain-line interval).
 */
export function createProgress(label: string, optsOrStream: ProgressOptions | ProgressStream = {}): Progress {
  const opts: ProgressOptions = isStream(optsOrStream) ? { stream: optsOrStream } : optsOrStream;
  const stream = opts.stream ?? process.stderr;
  const mode = process.env.WEIGHT_SPEC_PROGRESS;
  const tty = Boolean(stream.isTTY) && mode !== 'plain';
  const silent = mode === 'off';
  const now = opts.now ?? Date.now;
  // WEIGHT_SPEC_PROGRESS_INTERVAL_MS lets a driver that reads the plain lines (the extension's
  // progress notification) ask for them more often than a log wants them.
  const envInterval = Number(process.env.WEIGHT_SPEC_PROGRESS_INTERVAL_MS);
  const plainDefault = Number.isFinite(envInterval) && envInterval >= 50 ? envInterval : 5000;
  const interval = tty ? 100 : (opts.plainIntervalMs ?? plainDefault);
  const started = now();
  let done = 0;
  let total = opts.total;
  let detail = '';
  let last = -Infinity;
  let drawn = false;
  let finished = false;

  const amount = (n: number) => (opts.unit === 'bytes' ? formatBytes(n) : String(n));
  const status = (): string => {
    const pct = total ? Math.min(100, Math.floor((done / total) * 100)) : undefined;
    const count = total !== undefined ? `${amount(done)}/${amount(total)}` : amount(done);
    return pct !== undefined ? `${pct}% (${count})` : count;
  };
  const clear = () => {
    if (tty && drawn) stream.write('\r\x1b[K');
    drawn = false;
  };
  const draw = (force = false) => {
    if (silent || finished) return;
    const t = now();
    if (!force && t - last < interval) return;
    last = t;
    if (tty) {
      const width = Math.max(10, Math.min(30, (stream.columns ?? 80) - label.length - 40));
      const frac = total ? Math.min(1, done / total) : 0;
      const fill = Math.round(frac * width);
      const bar = total ? `[${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ` : '';
      let line = `${label} ${bar}${status()}${detail ? ` ${detail}` : ''}`;
      const cols = stream.columns ?? 80;
      if (line.length > cols - 1) line = line.slice(0, cols - 2) + '…';
      stream.write(`\r\x1b[K${line}`);
      drawn = true;
    } else {
      stream.write(`${label}: ${status()}${detail ? ` ${detail}` : ''}\n`);
    }
  };

  return {
    update(d, t, det) {
      done = d;
      if (t !== undefined) total = t;
      if (det !== undefined) detail = det;
      draw();
    },
    tick(n = 1, det) {
      done += n;
      if (det !== undefined) detail = det;
      draw();
    },
    log(line) {
      if (silent) return;
      clear();
      stream.write(line + '\n');
      if (tty) draw(true);
    },
    done(summary) {
      if (finished) return;
      clear();
      finished = true;
      if (silent) return;
      const secs = ((now() - started) / 1000).toFixed(1);
      stream.write(`${label}: ${summary ?? `done, ${status()}`} in ${secs}s\n`);
    },
    fail() {
      if (finished) return;
      clear();
      finished = true;
    },
  };
}
