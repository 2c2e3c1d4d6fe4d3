// The built CLI (`node dist/cli.js`), spawned as a user runs it: exit codes, check, inspect.
// Expected values come from the files themselves, parsed here independently of core/src.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, NOT_CHECKPOINTS, REPO_ROOT } from '../../../test/support/fixtures';
import { ELEM, onnxBytes, tempDir } from '../support/check-helpers';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

function cli(args: string[], cwd = REPO_ROOT) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_DEBUG: '' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` (npm test does) before these tests`);
});

describe('exit codes and usage', () => {
  it('--help lists every command and exits 0', () => {
    const r = cli(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['export', 'prepare', 'compile', 'run', 'check', 'inspect', 'demo'])
      expect(r.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
    const c = cli(['check', '--help']);
    expect(c.code).toBe(0);
    expect(c.stdout).toContain('usage: weight-spec check <weight_spec.json | export dir | VLM export dir>');
    expect(c.stdout).toContain('--json');
  });
  it.each([
    [[], /usage: weight-spec <command>/],
    [['frobnicate'], /weight-spec: unknown command "frobnicate"/],
    [['check'], /weight-spec: check: missing argument <weight_spec.json>/],
    [['check', 'a.json', 'b.json'], /unexpected argument "b.json"/],
    [['check', 'a.json', '--jsn'], /unknown option --jsn/],
    [['inspect'], /inspect: missing argument/],
    [['prepare', '--checkpoint', 'x', '--dtype', 'int4'], /--dtype must be one of float32, float16, bfloat16/],
    [['prepare', '--dtype', 'float32'], /missing required option --checkpoint/],
    [['run', 'x'], /run: give the prompt: --prompt "text", --chat "message" or --input-ids/],
    [['export', '--out', 'o', '--ctx-len', 'long'], /--ctx-len needs a decimal integer/],
  ])('%j is a usage error (exit 2)', (args, msg) => {
    const r = cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(msg);
    expect(r.stderr).toMatch(/usage: weight-spec/);
    expect(r.stdout).toBe('');
  });
  it('a failure is exit 1 with one line on stderr and no stack', () => {
    const r = cli(['check', '/nonexistent/weight_spec.json']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^weight-spec: .*nonexistent\/weight_spec\.json: no such file or directory/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    const i = cli(['inspect', '/nonexistent/dir']);
    expect(i.code).toBe(1);
    expect(i.stderr.trim().split('\n')).toHaveLength(1);
  });
  it('inspect on an export directory (graphs, no checkpoint) lists its ONNX files', () => {
    const dir = tempDir('ws-cli-');
    writeFileSync(
      path.join(dir, 'model.onnx'),
      onnxBytes(
        [
          { name: 'input_ids', elem: ELEM.INT64, dims: ['batch', 'seq'] },
          { name: 'w', elem: ELEM.FLOAT, dims: [2, 3] },
        ],
        [{ name: 'logits', elem: ELEM.FLOAT, dims: ['batch', 'seq', 7] }],
        { note: 'x' },
      ),
    );
    writeFileSync(path.join(dir, 'weight_spec.json'), '{}');
    const r = cli(['inspect', dir, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const [s] = JSON.parse(r.stdout);
    expect(s.inputs).toEqual([
      expect.objectContaining({ name: 'input_ids', dtype: 'I64', elemType: 7, dims: ['batch', 'seq'] }),
      expect.objectContaining({ name: 'w', dtype: 'F32', elemType: 1, dims: [2, 3] }),
    ]);
    expect(s.metadata).toEqual({ note: 'x' });
    const t = cli(['inspect', dir]);
    expect(t.stdout).toMatch(/^\s+w\s+F32\s+\[2, 3\]$/m);
    expect(t.stdout).toContain('note = x');
  });
  it('a corrupt safetensors file is exit 1 naming the file', () => {
    const dir = tempDir('ws-cli-');
    const f = path.join(dir, 'bad.safetensors');
    writeFileSync(f, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x7b]));
    const r = cli(['inspect', f]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('bad.safetensors');
  });
});

/** Header of a safetensors file, parsed from the format's definition. */
function header(file: string): Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }> {
  const buf = readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const h = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  delete h.__metadata__;
  return h;
}

/** The protobuf fields of `buf[start, end)`: field number → list of varints or byte ranges. */
function pbFields(buf: Buffer, start = 0, end = buf.length): Map<number, (number | Buffer)[]> {
  const out = new Map<number, (number | Buffer)[]>();
  let i = start;
  const varint = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = buf[i++]!;
      v += (b & 0x7f) * mul;
      mul *= 128;
      if (b < 0x80) return v;
    }
  };
  while (i < end) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    let val: number | Buffer;
    if (wire === 0) val = varint();
    else if (wire === 2) {
      const len = varint();
      val = buf.subarray(i, i + len);
      i += len;
    } else if (wire === 1) {
      val = 0;
      i += 8;
    } else if (wire === 5) {
      val = 0;
      i += 4;
    } else throw new Error(`wire type ${wire}`);
    if (!out.has(field)) out.set(field, []);
    out.get(field)!.push(val);
  }
  return out;
}
const str = (b: number | Buffer | undefined) => (b as Buffer).toString('utf8');

describeFixtures('inspect on the fixtures', () => {
  const families = () =>
    readdirSync(fixturesDir(), { withFileTypes: true })
      .filter((d) => d.isDirectory() && !(NOT_CHECKPOINTS as readonly string[]).includes(d.name))
      .map((d) => d.name);

  it('lists every tensor of every fixture directory with the right dtype, shape, shard and bytes', async () => {
    expect(families().length).toBeGreaterThanOrEqual(6);
    for (const fam of families()) {
      const dir = path.join(fixturesDir(), fam);
      // in-process: this is about the listing, not the process (one spawn per fixture cost ~1 s each)
      const r = await cliInProcess(['inspect', dir, '--json']);
      expect(r.code, r.stderr).toBe(0);
      const got = JSON.parse(r.stdout) as {
        files: string[];
        tensors: { key: string; dtype: string; shape: number[]; shard: string; bytes: number }[];
        totalBytes: number;
      };
      const indexFile = path.join(dir, 'model.safetensors.index.json');
      const index = existsSync(indexFile) ? (JSON.parse(readFileSync(indexFile, 'utf8')).weight_map as Record<string, string>) : undefined;
      const listed = got.files.map((f) => path.basename(f)).sort();
      // With an index the shards are the index's; without, every model*.safetensors is one
      // (whether other .safetensors in the folder belong is the checkpoint view's policy).
      const shards = index ? [...new Set(Object.values(index))].sort() : listed;
      if (index) expect(listed).toEqual(shards);
      else for (const n of readdirSync(dir).filter((x) => /^model.*\.safetensors$/.test(x))) expect(listed).toContain(n);
      const expected = new Map<string, { dtype: string; shape: number[]; shard: string; bytes: number }>();
      for (const shard of shards) {
        for (const [key, t] of Object.entries(header(path.join(dir, shard)))) {
          expected.set(key, { dtype: t.dtype, shape: t.shape, shard, bytes: t.data_offsets[1] - t.data_offsets[0] });
        }
      }
      if (index) expect(new Set(Object.keys(index))).toEqual(new Set(expected.keys()));
      expect(got.tensors.length, fam).toBe(expected.size);
      for (const t of got.tensors) {
        expect({ key: t.key, dtype: t.dtype, shape: t.shape, shard: t.shard, bytes: t.bytes }).toEqual({
          key: t.key,
          ...expected.get(t.key)!,
        });
      }
      expect(got.totalBytes).toBe([...expected.values()].reduce((a, t) => a + t.bytes, 0));

      // The table shows the same rows.
      const text = cli(['inspect', dir]);
      expect(text.code).toBe(0);
      const lines = text.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^key\s+dtype\s+shape\s+shard\s+bytes$/);
      for (const [key, t] of expected) {
        const row = lines.find((l) => l.startsWith(key + ' '));
        expect(row, key).toBeDefined();
        expect(row!.split(/\s{2,}/).map((s) => s.trim())).toEqual([key, t.dtype, `[${t.shape.join(', ')}]`, t.shard, String(t.bytes)]);
      }
      expect(lines[lines.length - 1]).toContain(`${expected.size} tensors, ${got.totalBytes} bytes`);
    }
  });

  it('a single safetensors file and an index file work too', () => {
    const f = path.join(fixturesDir(), 'gpt2', 'model.safetensors');
    const r = cli(['inspect', f, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(
      JSON.parse(r.stdout)
        .tensors.map((t: { key: string }) => t.key)
        .sort(),
    ).toEqual(Object.keys(header(f)).sort());
    const idx = cli(['inspect', path.join(fixturesDir(), 'mixtral', 'model.safetensors.index.json'), '--json']);
    expect(idx.code, idx.stderr).toBe(0);
    expect(JSON.parse(idx.stdout).files).toHaveLength(3);
  });

  it('ONNX: inputs, outputs, initializers, opsets, metadata match the protobuf', () => {
    const f = path.join(fixturesDir(), 'llama', 'legacy.onnx');
    const model = pbFields(readFileSync(f));
    const graphBuf = model.get(7)![0] as Buffer;
    const graph = pbFields(graphBuf);
    const names = (field: number) => (graph.get(field) ?? []).map((b) => str(pbFields(b as Buffer).get(1)?.[0]));
    const inputs = names(11);
    const outputs = names(12);
    const inits = (graph.get(5) ?? []).map((b) => str(pbFields(b as Buffer).get(8)?.[0]));
    const opsets = (model.get(8) ?? []).map((b) => {
      const o = pbFields(b as Buffer);
      return { domain: o.get(1) ? str(o.get(1)![0]) : '', version: o.get(2)![0] as number };
    });
    const r = cli(['inspect', f, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.inputs.map((v: { name: string }) => v.name)).toEqual(inputs);
    expect(s.outputs.map((v: { name: string }) => v.name)).toEqual(outputs);
    expect(s.initializers.map((v: { name: string }) => v.name)).toEqual(inits);
    expect(s.opsets).toEqual(opsets);
    expect(s.irVersion).toBe(model.get(1)![0]);

    const t = cli(['inspect', f]);
    expect(t.code).toBe(0);
    expect(t.stdout).toContain(`inputs (${inputs.length}):`);
    expect(t.stdout).toContain(`outputs (${outputs.length}):`);
    expect(t.stdout).toContain(`initializers (${inits.length}, `);
    expect(t.stdout).toMatch(new RegExp(`^opsets: .*${opsets[0]!.version}`, 'm'));
    for (const n of [...inputs, ...outputs, ...inits.slice(0, 5)]) expect(t.stdout).toContain(n);
  });
});

describeFixtures('check on the QEfficient sample', () => {
  const sample = () => path.join(fixturesDir(), 'qeff-v5-llama.weight_spec.json');

  it('exits 0 with no errors (repo-relative path, as the acceptance test runs it)', () => {
    const rel = path.relative(REPO_ROOT, sample());
    const r = cli(['check', rel]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(`${rel}: ok`);
    const j = cli(['check', rel, '--json']);
    expect(j.code).toBe(0);
    expect(JSON.parse(j.stdout)).toEqual([]);
  });

  it('one wrong key: exit 1, exactly one error whose range covers the string', () => {
    const good = 'model.layers.1.self_attn.o_proj.weight';
    const bad = 'model.layers.1.self_attn.o_prj.weight';
    const text = readFileSync(sample(), 'utf8');
    const edited = text.replace(`"key": "${good}"`, `"key": "${bad}"`);
    expect(edited).not.toBe(text);
    // Same directory semantics via --root: the copy lives in a temp dir, paths point back.
    const dir = tempDir('ws-cli-');
    const rel = path.relative(dir, fixturesDir());
    const moved = edited.replaceAll('"path": "llama/', `"path": "${rel}/llama/`);
    const file = path.join(dir, 'edited.weight_spec.json');
    writeFileSync(file, moved);
    const refused = cli(['check', file, '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout).map((p: { code: string }) => p.code)).toEqual(['path-outside-root', 'path-outside-root']);

    const r = cli(['check', file, '--json', '--root', fixturesDir()]);
    expect(r.code).toBe(1);
    const problems = JSON.parse(r.stdout);
    expect(problems).toHaveLength(1);
    expect(Object.keys(problems[0]).sort()).toEqual(['code', 'message', 'path', 'range', 'severity']);
    expect(problems[0].severity).toBe('error');
    expect(problems[0].code).toBe('key-missing');
    const start = moved.indexOf(`"${bad}"`);
    expect(problems[0].range).toEqual({ start, end: start + bad.length + 2 });
    expect(problems[0].message).toContain(bad);
    expect(problems[0].message).toContain(`did you mean "${good}"`);

    const t = cli(['check', file, '--root', fixturesDir()]);
    expect(t.code).toBe(1);
    const line = moved.slice(0, start).split('\n').length;
    const col = start - moved.lastIndexOf('\n', start - 1);
    expect(t.stdout).toContain(`edited.weight_spec.json:${line}:${col}: error [key-missing] key "${bad}"`);
  });
});
