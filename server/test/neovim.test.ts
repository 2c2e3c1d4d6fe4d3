// A real headless Neovim (Debian's 0.7.2, built-in LSP client) against the bundled server
// (`node dist/server.js --stdio`) on our own export of a copy of the llama fixture with one
// misspelled key: diagnostics, hover, the quick fix, completion accepted with <C-x><C-o> and
// <C-y>, the Prepare lens run through workspace/executeCommand, and the not-prepared warnings
// clearing without an edit. Neovim runs server/test/neovim/lsp-check.lua, which writes what
// it saw to a JSON file read here.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SERVER_COMMANDS } from '../../core/src/protocol';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { bundleServer, editorResult, FIXED_KEY, typoExport, TYPO_KEY, type EditorSteps } from './support';

const tmp = tempDirs('ws-lsp-nvim-');
const haveNvim = spawnSync('nvim', ['--version'], { stdio: 'ignore' }).status === 0;
if (!haveNvim && process.env.CI === 'true') throw new Error("nvim is missing (CI installs Debian's neovim package via .ci/run)");
const TYPO = TYPO_KEY;
const FIXED = FIXED_KEY;
const COMPLETE_KEY = 'model.layers.1.mlp.down_proj.weight';
const PREFIX = 'model.layers.1.mlp.down_pr';

(haveNvim ? describeFixtures : describe.skip)('Neovim 0.7 built-in LSP client against dist/server.js', () => {
  let steps: EditorSteps;
  let errors: string[];
  let dir: string;
  let prepared: string;
  let spec: string;
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    dir = tmp();
    ({ spec, prepared } = typoExport(fixturesDir(), REPO_ROOT, dir, FIXED, TYPO));
    const out = path.join(dir, 'nvim-out.json');
    const r = spawnSync(
      'nvim',
      ['--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-c', `luafile ${path.join(__dirname, 'neovim', 'lsp-check.lua')}`],
      {
        cwd: dir,
        timeout: 150_000,
        env: {
          ...process.env,
          XDG_CACHE_HOME: path.join(dir, 'cache'),
          WS_SERVER: path.join(REPO_ROOT, 'dist', 'server.js'),
          WS_SPEC: spec,
          WS_ROOT: dir,
          WS_OUT: out,
          WS_TYPO: TYPO,
          WS_COMPLETE_KEY: COMPLETE_KEY,
          WS_COMPLETE_PREFIX: PREFIX,
        },
        encoding: 'utf8',
      },
    );
    expect(existsSync(out), `nvim wrote no results (status ${r.status}, ${r.stderr})`).toBe(true);
    ({ steps, errors } = editorResult(out));
  }, 180_000);

  it('ran without Lua errors', () => {
    expect(errors).toEqual([]);
  });

  it("Neovim's LSP log holds no errors (protocol errors, error-level logs, server stderr)", () => {
    const log = path.join(dir, 'cache', 'nvim', 'lsp.log');
    const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n') : [];
    expect(lines.filter((l) => l.includes('[ERROR]'))).toEqual([]);
  });

  it('diagnostics: key-missing with did-you-mean on the misspelled key, not-prepared on the files', () => {
    const codes = (steps.diagnostics as { code: string }[]).map((d) => d.code).sort();
    expect(codes).toEqual(['key-missing', 'not-prepared']);
    const missing = (steps.diagnostics as { code: string; message: string }[]).find((d) => d.code === 'key-missing')!;
    expect(missing.message).toContain(`did you mean "${FIXED}"`);
  });

  it('hover on the misspelled key names it and the graph input', () => {
    expect(steps.hover).toContain(TYPO);
    expect(steps.hover).toContain(`ONNX input \`${FIXED}\``);
  });

  it('the quick fix applied clears key-missing and keeps valid JSON', () => {
    expect(steps.actions[0]).toBe(`Change key to "${FIXED}"`);
    expect(steps.after_fix).toEqual({ valid_json: true, codes: ['not-prepared'] });
  });

  it('accepting a completion inside a key leaves valid JSON with the complete key', () => {
    expect(steps.completion.words).toEqual([COMPLETE_KEY]);
    expect(steps.completion.line.trim()).toBe(`"key": "${COMPLETE_KEY}"`);
    expect(steps.completion.valid_json).toBe(true);
    expect(steps.after_completion.codes).toEqual(['not-prepared']);
  });

  it('the Prepare lens runs through workspace/executeCommand, prepares, and the not-prepared warnings clear without an edit', () => {
    expect(steps.lenses.commands[0]).toBe(SERVER_COMMANDS.prepare);
    expect(steps.prepare.messages[0].msg).toBe(`Prepared ${path.join(dir, 'llama')} into ${prepared}`);
    expect(existsSync(path.join(prepared, '.checkpoint_prepared'))).toBe(true);
    expect(steps.prepare.cleared).toBe(true);
    expect(steps.prepare.codes).toEqual([]);
    expect(steps.prepare.edits_since).toBe(0);
  });
});
