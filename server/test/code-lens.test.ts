/**
 * The spec's code lenses (server/src/code-lens.ts) as data: the Run prompt lens (issue 51) is
 * the extension's alone (it asks for the prompt in an input box) and appears once the export is
 * compiled; other clients get the server's commands and no such lens.
 */
import { pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';
import { CLIENT_COMMANDS, PREPARE_LENS_OPTIONS, SERVER_COMMANDS } from '../../core/src/protocol';
import { codeLenses } from '../src/code-lens';

it('the Run prompt lens: the extension gets it once the export is compiled; other clients never (no input box)', () => {
  const uri = pathToFileURL('/e/weight_spec.json').toString();
  const titles = (state: 'never-compiled' | 'up-to-date' | 'stale', client: boolean) =>
    codeLenses(uri, { state } as never, undefined, client).map((l) => `${l.command!.title} → ${l.command!.command}`);
  expect(titles('up-to-date', true).at(-1)).toBe(`Run prompt… → ${CLIENT_COMMANDS.runPrompt}`);
  expect(titles('up-to-date', true)).toHaveLength(4);
  expect(titles('never-compiled', true).some((t) => t.includes('Run prompt'))).toBe(false);
  expect(titles('stale', true).some((t) => t.includes('Run prompt'))).toBe(false);
  expect(titles('up-to-date', false).some((t) => t.includes('Run prompt'))).toBe(false);
  expect(titles('up-to-date', false).at(-1)).toContain(SERVER_COMMANDS.inspect);
});

it("the Prepare lens asks the extension to confirm the dtype (issue 50); the server's own Prepare gets the spec alone", () => {
  const uri = pathToFileURL('/e/weight_spec.json').toString();
  const prepare = (client: boolean) => codeLenses(uri, { state: 'never-compiled' } as never, undefined, client)[0]!.command!;
  expect(prepare(true)).toEqual({
    title: 'Prepare checkpoint',
    command: CLIENT_COMMANDS.prepare,
    arguments: [uri, { confirmDtype: true }],
  });
  expect(PREPARE_LENS_OPTIONS).toEqual({ confirmDtype: true });
  expect(prepare(false)).toEqual({ title: 'Prepare checkpoint', command: SERVER_COMMANDS.prepare, arguments: [uri] });
});
