/**
 * Go to Definition (F12) from a spec to the checkpoint, and the hover's links: on a key, the
 * shard that holds its tensor (for a client with `tensorLinks`, the extension, the URI says
 * which tensor: `#tensor=<key>`, and the checkpoint viewer opens at it); on a `files[].path`,
 * the shard itself. The file is where the last check found it (core's one resolver of a
 * spec's files: the spec's path, else the prepared folder the export's report names), so a
 * prepared export without its link still navigates. Nothing on disk (not prepared): no definition.
 */
import { pathToFileURL } from 'node:url';
import type { Location } from 'vscode-languageserver/node';
import type { CheckRun } from '../../core/src/check';
import { CLIENT_COMMANDS, tensorLinkUri } from '../../core/src/protocol';
import { targetAt, tensorOf } from './spec-target';

const START = { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };

/** The shard file a key's tensor lies in (as read by the check), with its stored key; undefined when not on disk. */
export function tensorFileOf(run: CheckRun, input: number): { file: string; key: string } | undefined {
  const hit = tensorOf(run, input);
  if (!hit) return undefined;
  const st = run.files[hit.file];
  // a planned header (prepare has not written the shard) is no file to open
  if (!st?.abs || st.planned || st.missingPrepared) return undefined;
  return { file: st.abs, key: hit.info.key };
}

/** The definition at `offset` of a checked spec, or null. */
export function definitionAt(run: CheckRun, offset: number, tensorLinks: boolean): Location | null {
  const t = targetAt(run, offset);
  if (!t) return null;
  if (t.kind === 'key') {
    const at = tensorFileOf(run, t.input);
    if (!at) return null;
    const uri = pathToFileURL(at.file).toString();
    return { uri: tensorLinks ? tensorLinkUri(uri, at.key) : uri, range: START };
  }
  if (t.kind === 'file') {
    const st = run.files[t.file];
    if (!st?.abs || !st.header || st.planned) return null;
    return { uri: pathToFileURL(st.abs).toString(), range: START };
  }
  return null;
}

/** A markdown link target for a tensor: the extension's openTensor command, else the shard's file URI. */
export function tensorLinkTarget(file: string, key: string, tensorLinks: boolean): string {
  if (!tensorLinks) return pathToFileURL(file).toString();
  return `command:${CLIENT_COMMANDS.openTensor}?${encodeURIComponent(JSON.stringify([file, key]))}`;
}
