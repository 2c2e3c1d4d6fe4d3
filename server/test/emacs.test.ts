// Debian's Emacs 28 (emacs-nox) with eglot 1.9 (elpa-eglot), configured by exactly the
// docs/EDITOR.md's snippet, against the bundled server (`weight-spec-language-server`, the package's
// bin) on our own export of a copy of the llama fixture with one misspelled key. Emacs runs
// `-nw` in a tmux pane so its real command loop runs (keys, idle timers for eglot's didChange
// and Flymake); server/test/emacs/eglot-check.el drives it and writes what it saw to a JSON
// file read here: diagnostics, hover, the quick fix, completion picked as company/corfu pick
// and with C-M-i right after "mlp.", Prepare through workspace/executeCommand with the
// warnings gone at its reply, and a renamed shard of the prepared folder noticed without an edit.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { bundleServer, editorResult, FIXED_KEY, typoExport, TYPO_KEY, type EditorSteps } from './support';

const tmp = tempDirs('ws-lsp-emacs-');
const have = (cmd: string, arg: string) => spawnSync(cmd, [arg], { stdio: 'ignore' }).status === 0;
const eglotInstalled = () => spawnSync('emacs', ['--batch', '--eval', "(require 'eglot)"], { stdio: 'ignore' }).status === 0;
const haveEmacs = have('emacs', '--version') && have('tmux', '-V') && eglotInstalled();
if (!haveEmacs && process.env.CI === 'true') {
  throw new Error("emacs, eglot or tmux is missing (CI installs Debian's emacs-nox, elpa-eglot and tmux via .ci/run)");
}
const TYPO = TYPO_KEY;
const FIXED = FIXED_KEY;
const COMPLETE_KEY = 'model.layers.1.mlp.down_proj.weight';
const PREFIX = 'model.layers.1.mlp.down_pr';
const DOT_PREFIX = 'model.layers.1.mlp.';

/** docs/EDITOR.md's Emacs snippet: the first elisp block of "Other editors". */
function readmeSnippet(): string {
  const readme = readFileSync(path.join(REPO_ROOT, 'docs', 'EDITOR.md'), 'utf8');
  const start = readme.indexOf('## Other editors');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 5));
  const block = /```elisp\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('docs/EDITOR.md has no elisp block under "Other editors"');
  return block[1]!;
}

/** Polls `cond` every 100 ms until it holds or `ms` passed; returns whether it held. */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

(haveEmacs ? describeFixtures : describe.skip)("Debian's Emacs 28 + eglot 1.9, set up by docs/EDITOR.md, against dist/server.js", () => {
  let steps: EditorSteps;
  let errors: string[];
  let dir: string;
  let prepared: string;
  let shard: string;
  beforeAll(async () => {
    await bundleServer(REPO_ROOT);
    dir = tmp();
    let spec: string;
    ({ spec, prepared } = typoExport(fixturesDir(), REPO_ROOT, dir, FIXED, TYPO));
    // The model folder is a git repository holding the checkpoint, the export and the prepared
    // folder, as a user's is: eglot (project.el) then roots the workspace there, and the report's
    // paths (../llama, the prepared folder beside it) lie inside it (issue 28's confinement).
    execFileSync('git', ['init', '-q', dir]);
    // The spec's first file, in the prepared folder (reached through the export's symlink).
    const first = (JSON.parse(readFileSync(spec, 'utf8')) as { files: { path: string }[] }).files[0]!.path;
    shard = path.join(prepared, path.basename(first));
    // The bin on PATH, as `npm install -g .` links it; node beside it.
    const bin = path.join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(path.join(REPO_ROOT, 'dist', 'server.js'), path.join(bin, 'weight-spec-language-server'));
    // docs/EDITOR.md's snippet is the whole init file of a fresh HOME (Debian's site-start
    // activates elpa-eglot; `-q` would skip that package activation too).
    const home = path.join(dir, 'home');
    mkdirSync(path.join(home, '.emacs.d'), { recursive: true });
    mkdirSync(path.join(dir, 'tmp'));
    writeFileSync(path.join(home, '.emacs.d', 'init.el'), readmeSnippet());
    const sock = path.join(dir, 'tmux.sock');
    const out = path.join(dir, 'emacs-out.json');
    const env: Record<string, string> = {
      HOME: home,
      TMPDIR: path.join(dir, 'tmp'), // Emacs's native compilation of site-start's packages writes there
      TERM: 'xterm-256color',
      PATH: [bin, path.dirname(process.execPath), process.env.PATH ?? ''].join(':'),
      WS_TMUX: sock,
      WS_SPEC: spec,
      WS_OUT: out,
      WS_TYPO: TYPO,
      WS_COMPLETE_KEY: COMPLETE_KEY,
      WS_COMPLETE_PREFIX: PREFIX,
      WS_DOT_PREFIX: DOT_PREFIX,
      WS_SHARD: shard,
    };
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const script = path.join(dir, 'run.sh');
    writeFileSync(
      script,
      [
        '#!/bin/sh',
        ...Object.entries(env).map(([k, v]) => `export ${k}=${q(v)}`),
        `cd ${q(path.join(dir, 'exp'))}`,
        // No native compilation of the packages loaded (a fresh HOME has no eln cache: it would
        // compile them in the background, on a CPU the other tests share, and pop up warnings).
        `exec emacs -nw --eval '(setq native-comp-deferred-compilation nil native-comp-async-report-warnings-errors nil)' -l ${q(
          path.join(__dirname, 'emacs', 'eglot-check.el'),
        )}`,
      ].join('\n'),
      { mode: 0o755 },
    );
    const tmux = (...args: string[]) => spawnSync('tmux', ['-S', sock, '-f', '/dev/null', ...args], { encoding: 'utf8' });
    // remain-on-exit keeps the pane after Emacs exits, so an early exit shows its status and
    // last screen instead of ending the session (which a busy machine's failing `has-session`
    // could not tell apart from a crash).
    const started = tmux(
      'new-session',
      '-d',
      '-s',
      'ws',
      '-x',
      '160',
      '-y',
      '48',
      script,
      ';',
      'set-option',
      '-t',
      'ws',
      'remain-on-exit',
      'on',
    );
    expect(started.status, started.stderr).toBe(0);
    const paneState = () => tmux('display-message', '-p', '-t', 'ws', '#{pane_dead} #{pane_dead_status}').stdout.trim();
    const exited = () => paneState().startsWith('1') || (tmux('has-session').status !== 0 && tmux('has-session').status !== 0);
    const done = () => {
      try {
        return (JSON.parse(readFileSync(out, 'utf8')) as { steps: EditorSteps }).steps.done === true;
      } catch {
        return false; // not written yet, or being written
      }
    };
    const watch = async (): Promise<{ finished: boolean; screen: string }> => {
      try {
        const finished = await until(() => done() || exited(), 280_000);
        return { finished, screen: `[pane dead?, exit status: ${paneState() || 'no session'}]\n${tmux('capture-pane', '-p').stdout}` };
      } finally {
        tmux('kill-server'); // Emacs and the server with it, whatever happened
      }
    };
    const { finished, screen } = await watch();
    expect(finished && existsSync(out), `Emacs wrote no results; its screen:\n${screen}`).toBe(true);
    ({ steps, errors } = editorResult(out));
    expect(steps.done, `Emacs stopped early; its screen:\n${screen}`).toBe(true);
  }, 300_000);

  it('ran every step in time, and the server wrote nothing on stderr', () => {
    expect(errors, `eglot's JSON-RPC log:\n${String(steps.events)}\n*Messages*:\n${String(steps.messages)}`).toEqual([]);
    expect(steps.stderr).toBe('');
  });

  it("docs/EDITOR.md's snippet puts the spec in weight-spec-mode, managed by eglot", () => {
    expect(steps.mode).toBe('weight-spec-mode');
    expect(steps.managed).toBe(true);
  });

  it('diagnostics: key-missing with did-you-mean on the misspelled key, not-prepared on the files', () => {
    const diags = steps.diagnostics as { code: string; text: string }[];
    expect(diags.map((d) => d.code).sort()).toEqual(['key-missing', 'not-prepared']);
    expect(diags.find((d) => d.code === 'key-missing')!.text).toContain(`did you mean "${FIXED}"`);
  });

  it('hover (ElDoc) on the misspelled key names it and the graph input', () => {
    expect(steps.hover).toContain(TYPO);
    expect(steps.hover).toContain(FIXED);
  });

  it('the quick fix clears key-missing and keeps valid JSON', () => {
    expect(steps.after_fix).toEqual({ codes: ['not-prepared'], valid_json: true, typo_left: false });
  });

  it('a completion picked as company/corfu pick it leaves the complete key and valid JSON', () => {
    expect(steps.company_candidates).toEqual(['down_proj.weight']);
    expect(steps.company.line.trim()).toBe(`"key": "${COMPLETE_KEY}"`);
    expect(steps.company.valid_json).toBe(true);
  });

  it('C-M-i right after "mlp." offers the keys\' rest and inserts nothing; one letter more completes the key', () => {
    expect(steps.cmi_dot.line.trim()).toBe(`"key": "${DOT_PREFIX}"`);
    for (const rest of ['down_proj.weight', 'gate_proj.weight', 'up_proj.weight']) expect(steps.cmi_dot.listed).toContain(rest);
    expect(steps.cmi.line.trim()).toBe(`"key": "${COMPLETE_KEY}"`);
    expect(steps.cmi.valid_json).toBe(true);
  });

  it('Prepare through workspace/executeCommand: prepared, and the not-prepared warnings gone at its reply, without an edit', () => {
    expect(steps.prepare_result).toContain(':ok t');
    expect(existsSync(path.join(prepared, '.checkpoint_prepared'))).toBe(true);
    expect(steps.prepare_reply_codes).toEqual([]);
    expect(steps.prepare).toEqual({ codes: [], edits_since: 0, message: true });
  });

  it('a shard of the prepared folder renamed is noticed without an edit', () => {
    expect(existsSync(`${shard}.moved`)).toBe(true);
    expect(steps.renamed.codes).toEqual(['not-prepared', 'prepared-incomplete']);
    // one not-prepared diagnostic for the spec with the count (issue 36.6), and the incomplete
    // prepared folder naming the missing shard
    const texts = steps.renamed.texts as string[];
    expect(texts.find((t) => t.includes('[not-prepared]'))).toMatch(/1 of 2 shards missing/);
    expect(texts.find((t) => t.includes('[prepared-incomplete]'))).toContain(path.basename(shard));
    expect(steps.renamed.edits_since).toBe(0);
  });
});
