/**
 * Every handler runs guarded: an exception (a bug, or input nobody foresaw) is logged on the
 * connection and the request answers with its empty result — the server never crashes and
 * never leaves a request unanswered.
 */
import type { CancellationToken, Connection } from 'vscode-languageserver/node';
import { oneLine } from '../../core/src/errors';

/** Logging the server does (the connection's console; a no-op before it exists). */
export interface Log {
  info(msg: string): void;
  error(msg: string): void;
}

/** The connection's console as a {@link Log}. */
export function connectionLog(connection: Connection): Log {
  return {
    info: (m) => {
      try {
        connection.console.info(m);
      } catch {
        /* the connection is gone */
      }
    },
    error: (m) => {
      try {
        connection.console.error(m);
      } catch {
        /* the connection is gone */
      }
    },
  };
}

/** Wraps a request handler: errors and cancellation give `fallback`. */
export function guarded<P, R>(
  log: Log,
  name: string,
  fallback: R,
  fn: (params: P, token: CancellationToken) => R | Promise<R>,
): (params: P, token: CancellationToken) => Promise<R> {
  return async (params, token) => {
    try {
      if (token?.isCancellationRequested) return fallback;
      const r = await fn(params, token);
      return token?.isCancellationRequested ? fallback : r;
    } catch (err) {
      log.error(`${name} failed: ${oneLine(err)}${err instanceof Error && err.stack ? `\n${err.stack}` : ''}`);
      return fallback;
    }
  };
}

/** Wraps a notification handler: errors are logged. */
export function guardedNotification<P>(log: Log, name: string, fn: (params: P) => void | Promise<void>): (params: P) => void {
  return (params) => {
    try {
      const r = fn(params);
      if (r && typeof (r as Promise<void>).catch === 'function') {
        (r as Promise<void>).catch((err: unknown) => log.error(`${name} failed: ${oneLine(err)}`));
      }
    } catch (err) {
      log.error(`${name} failed: ${oneLine(err)}`);
    }
  };
}
