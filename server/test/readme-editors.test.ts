// docs/EDITOR.md's "Other editors" configurations parse: Helix's TOML (Python's tomllib), Emacs'
// elisp (a reader for the s-expression syntax the snippet uses), Neovim's Lua (Neovim's own
// loadstring), and each names the server's bin and our settings.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';

const tmp = tempDirs('ws-readme-editors-');
const readme = readFileSync(path.join(REPO_ROOT, 'docs', 'EDITOR.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Other editors'), readme.indexOf('\n## ', readme.indexOf('## Other editors') + 5));
const blocks = (lang: string) => [...section.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };

type Sexp = string | number | { sym: string } | Sexp[];

/** Reads elisp forms: lists, strings with escapes, symbols/keywords, numbers, quote. Throws on bad syntax. */
function readElisp(src: string): Sexp[] {
  let i = 0;
  const ws = () => {
    while (i < src.length && (/\s/.test(src[i]!) || src[i] === ';')) {
      if (src[i] === ';') while (i < src.length && src[i] !== '\n') i++;
      else i++;
    }
  };
  const form = (): Sexp => {
    ws();
    const c = src[i];
    if (c === undefined) throw new Error('unexpected end of input');
    if (c === "'" || c === '`') {
      i++;
      return [{ sym: 'quote' }, form()];
    }
    if (c === '#' && src[i + 1] === "'") {
      i += 2;
      return [{ sym: 'function' }, form()];
    }
    if (c === '(') {
      i++;
      const list: Sexp[] = [];
      for (;;) {
        ws();
        if (src[i] === undefined) throw new Error('unclosed (');
        if (src[i] === ')') {
          i++;
          return list;
        }
        if (src[i] === '.' && /\s/.test(src[i + 1] ?? '')) {
          i++;
          list.push({ sym: '.' });
          continue;
        }
        list.push(form());
      }
    }
    if (c === ')') throw new Error(`unexpected ) at ${i}`);
    if (c === '"') {
      let s = '';
      i++;
      while (src[i] !== '"') {
        if (src[i] === undefined) throw new Error('unclosed string');
        if (src[i] === '\\') i++;
        s += src[i++];
      }
      i++;
      return s;
    }
    const m = /^[^\s()"';]+/.exec(src.slice(i))!;
    i += m[0].length;
    return /^-?\d+(\.\d+)?$/.test(m[0]) ? Number(m[0]) : { sym: m[0] };
  };
  const out: Sexp[] = [];
  for (ws(); i < src.length; ws()) out.push(form());
  return out;
}

describe('docs/EDITOR.md "Other editors"', () => {
  it('names the bin package.json declares', () => {
    expect(pkg.bin['weight-spec-language-server']).toBe('dist/server.js');
    expect(section).toContain('weight-spec-language-server');
  });

  it('Helix languages.toml parses and wires the server to weight_spec.json files with our settings', () => {
    const [toml] = blocks('toml');
    expect(toml).toBeDefined();
    const file = path.join(tmp(), 'languages.toml');
    writeFileSync(file, toml!);
    const r = spawnSync('python3', ['-c', 'import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], "rb"))))', file], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    const cfg = JSON.parse(r.stdout) as {
      'language-server': Record<string, { command: string; args: string[]; config: unknown }>;
      language: { name: string; 'language-servers': string[]; 'file-types': unknown[] }[];
    };
    expect(cfg['language-server']['weight-spec']).toEqual({
      command: 'weight-spec-language-server',
      args: ['--stdio'],
      config: { weightSpec: { defaultDtype: 'float32', compileBackend: 'ort' } },
    });
    expect(cfg.language[0]).toMatchObject({ name: 'weight-spec', 'language-servers': ['weight-spec'] });
    expect(cfg.language[0]!['file-types']).toEqual([{ glob: 'weight_spec.json' }, { glob: '*.weight_spec.json' }]);
  });

  it('the Emacs eglot configuration reads as elisp and registers the server command', () => {
    const [elisp] = blocks('elisp');
    expect(elisp).toBeDefined();
    const forms = readElisp(elisp!);
    expect(forms.length).toBe(5);
    const flat = JSON.stringify(forms);
    expect(flat).toContain('"weight-spec-language-server","--stdio"');
    // js-mode, not js-json-mode (Emacs 29.1+ only): one snippet for Emacs 28 and 29 (issue 38).
    expect(forms[0]).toEqual([{ sym: 'define-derived-mode' }, { sym: 'weight-spec-mode' }, { sym: 'js-mode' }, 'Weight-Spec']);
    expect(flat).toContain('{"sym":"eglot-server-programs"}');
    expect(flat).toContain('{"sym":":initializationOptions"}');
    expect(flat).toContain('{"sym":":weightSpec"}');
    // The auto-mode regexp, as Emacs reads the string: weight_spec\.json\' (end of name).
    expect(flat).toContain(JSON.stringify("weight_spec\\.json\\'"));
    expect(() => readElisp('(a (b "c")')).toThrow(/unclosed/); // the reader rejects bad syntax
  });

  it('the Neovim snippets run: specs start the server with our command and settings, other JSON files do not', () => {
    const [startSnippet, lspconfigSnippet] = blocks('lua');
    const have = spawnSync('nvim', ['--version'], { stdio: 'ignore' }).status === 0;
    if (!have) return expect(process.env.CI).not.toBe('true');
    const dir = tmp();
    const files = { start: path.join(dir, 'start.lua'), lspconfig: path.join(dir, 'lspconfig.lua'), out: path.join(dir, 'out.json') };
    writeFileSync(files.start, startSnippet!);
    writeFileSync(files.lspconfig, lspconfigSnippet!);
    for (const f of ['weight_spec.json', 'm.weight_spec.json', 'package.json']) writeFileSync(path.join(dir, f), '{}');
    // Neovim 0.7.2 (Debian) has neither vim.lsp.start nor vim.fs, and lspconfig is a plugin:
    // stand-ins record what the snippets hand them; the snippets themselves run unchanged.
    const driver = `
      local out = { started = {}, setup = {} }
      vim.lsp.start = function(cfg) table.insert(out.started, { name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t'), cmd = cfg.cmd, root = cfg.root_dir, init = cfg.init_options }) end
      vim.fs = vim.fs or { dirname = function(p) return vim.fn.fnamemodify(p, ':h') end }
      package.loaded['lspconfig.configs'] = {}
      package.loaded['lspconfig'] = setmetatable({}, { __index = function(_, k) return { setup = function() table.insert(out.setup, k) end } end })
      dofile('${files.start}')
      vim.cmd('filetype on')
      for _, f in ipairs({ 'weight_spec.json', 'm.weight_spec.json', 'package.json' }) do vim.cmd('edit ${dir}/' .. f) end
      dofile('${files.lspconfig}')
      local def = package.loaded['lspconfig.configs'].weight_spec.default_config
      out.lspconfig = { cmd = def.cmd, filetypes = def.filetypes, settings = def.settings, roots = {
        spec = def.root_dir('${dir}/weight_spec.json') or vim.NIL, named = def.root_dir('${dir}/m.weight_spec.json') or vim.NIL,
        other = def.root_dir('${dir}/package.json') or vim.NIL } }
      vim.fn.writefile({ vim.fn.json_encode(out) }, '${files.out}')`;
    writeFileSync(path.join(dir, 'driver.lua'), driver);
    const r = spawnSync(
      'nvim',
      ['--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-c', `luafile ${path.join(dir, 'driver.lua')}`, '-c', 'qa!'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.stderr).toBe('');
    const out = JSON.parse(readFileSync(files.out, 'utf8')) as { started: unknown[]; setup: string[]; lspconfig: unknown };
    const cmd = ['weight-spec-language-server', '--stdio'];
    const settings = { defaultDtype: 'float32', compileBackend: 'ort' };
    expect(out.started).toEqual([
      { name: 'weight_spec.json', cmd, root: dir, init: settings },
      { name: 'm.weight_spec.json', cmd, root: dir, init: settings },
    ]);
    expect(out.setup).toEqual(['weight_spec']);
    expect(out.lspconfig).toEqual({
      cmd,
      filetypes: ['json'],
      settings: { weightSpec: settings },
      roots: { spec: dir, named: dir, other: null },
    });
  });

  it("the Neovim Lua snippets compile (Neovim's loadstring)", () => {
    const lua = blocks('lua');
    expect(lua.length).toBe(2);
    const have = spawnSync('nvim', ['--version'], { stdio: 'ignore' }).status === 0;
    if (!have) return expect(process.env.CI).not.toBe('true');
    for (const code of lua) {
      const file = path.join(tmp(), 'snippet.lua');
      writeFileSync(file, code);
      const r = spawnSync(
        'nvim',
        [
          '--headless',
          '-u',
          'NONE',
          '-i',
          'NONE',
          '-n',
          '-c',
          `lua local f = io.open('${file}'); local ok, err = loadstring(f:read('*a')); if not ok then io.stderr:write(err) vim.cmd('cq') end`,
          '-c',
          'qa!',
        ],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(r.stderr + r.stdout).toBe('');
      expect(r.status).toBe(0);
    }
  });
});
