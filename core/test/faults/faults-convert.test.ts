/**
 * Faults during a write pipeline (the `.bin` converter, which writes like prepare does: temp
 * sibling + rename, or atomic files in an existing directory): disk full, SIGKILL at random
 * moments. Each run ends in a clear one-line error or a complete output — never an output
 * that looks converted but is not — and a re-run repairs what a killed run left.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { bundleScript, havePrlimit, listTree, mountSmallFs, rng, runChild } from '../support/faults-harness';
import { buildTorchBin, parseSafetensors, stateDictPickle, type TensorDesc } from '../support/pickle-build';

const N = 400;
const ELEMS = 32 * 1024; // 128 KiB f32 per tensor → 50 MiB checkpoint
const makeTmp = tempDirs('ws-faults-');
let tmp: string;
let script: string;
let bin: string;
const expected = new Map<string, Uint8Array>();

beforeAll(async () => {
  tmp = makeTmp();
  const descs: TensorDesc[] = [];
  const storages: Record<string, Uint8Array> = {};
  for (let i = 0; i < N; i++) {
    const data = new Uint8Array(ELEMS * 4);
    for (let j = 0; j < data.length; j += 4096) data[j] = (i * 31 + j) & 0xff;
    data[data.length - 1] = i & 0xff;
    storages[String(i)] = data;
    expected.set(`layers.${i}.weight`, data);
    descs.push({
      key: `layers.${i}.weight`,
      storageKey: String(i),
      storageType: 'FloatStorage',
      storageNumel: ELEMS,
      offset: 0,
      shape: [ELEMS / 128, 128],
      stride: [128, 1],
    });
  }
  bin = path.join(tmp, 'pytorch_model.bin');
  fs.writeFileSync(bin, buildTorchBin(stateDictPickle(descs, 2), storages));
  const src = path.resolve(__dirname, '..', '..', 'src');
  script = await bundleScript(
    `import { convertBinCheckpoint } from ${JSON.stringify(path.join(src, 'formats', 'pickle'))};
     import { oneLine } from ${JSON.stringify(path.join(src, 'errors'))};
     convertBinCheckpoint(process.argv[2]!, process.argv[3]!, { overwrite: process.argv[4] === 'overwrite' })
       .then(() => process.exit(0), (e) => { process.stderr.write('weight-spec: ' + oneLine(e) + '\\n'); process.exit(1); });`,
    tmp,
    'convert-child',
  );
}, 60_000);

/** A converted output is complete and exact, or absent. Returns 'complete' | 'absent'. */
function state(out: string): 'complete' | 'absent' {
  const file = path.join(out, 'model.safetensors');
  if (!fs.existsSync(file)) return 'absent';
  const got = parseSafetensors(fs.readFileSync(file));
  expect(got.size).toBe(N);
  for (const [k, v] of expected) expect(Buffer.from(got.get(k)!.data).equals(Buffer.from(v))).toBe(true);
  return 'complete';
}

describe('converter under faults', () => {
  it('disk full: one clear error, nothing kept, and a re-run with space succeeds', async () => {
    const small = mountSmallFs(path.join(tmp, 'small'), 2 * 1024 * 1024);
    try {
      const out = path.join(tmp, 'small', 'out');
      const r = small
        ? await runChild(script, [bin, out])
        : havePrlimit()
          ? await runChild(script, [bin, out], { fsizeBytes: 2 * 1024 * 1024 })
          : undefined;
      if (!r) throw new Error('neither tmpfs nor prlimit is available to simulate a full disk');
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(small ? /no space left on the device/ : /file size limit/);
      expect(lines[0]).toContain(out);
      expect(listTree(path.join(tmp, 'small'))).toEqual([]);
      // Re-run where there is room.
      const big = path.join(tmp, 'big-out');
      const ok = await runChild(script, [bin, big]);
      expect(ok.stderr).toBe('');
      expect(ok.code).toBe(0);
      expect(state(big)).toBe('complete');
    } finally {
      small?.unmount();
    }
  });

  it('SIGKILL at random moments (fresh output): complete or absent, and a re-run repairs', async () => {
    // The kill window: node start-up to the end of the fastest of three full runs.
    const runs = [];
    for (let k = 0; k < 3; k++) {
      const r = await runChild(script, [bin, path.join(tmp, `timing-${k}`)]);
      expect(r.code).toBe(0);
      runs.push(r.ms);
    }
    const full = { ms: Math.min(...runs) };
    const next = rng(20261202);
    const outcomes: string[] = [];
    let killed = 0;
    let window = full.ms;
    for (let k = 0; k < 16 && killed < 6; k++) {
      const out = path.join(tmp, `kill-${k}`);
      const delay = Math.round(window * (0.2 + next(1000) / 1000));
      const r = await runChild(script, [bin, out], { killAfterMs: delay });
      if (r.signal === 'SIGKILL') killed++;
      else window *= 0.8;
      const s = state(out);
      outcomes.push(`${delay}ms:${r.signal ?? r.code}:${s}`);
      if (r.code === 0) expect(s).toBe('complete');
      // Repair: the next run succeeds and removes the killed run's temp sibling.
      const again = await runChild(script, [bin, out, 'overwrite']);
      expect(again.stderr).toBe('');
      expect(state(out)).toBe('complete');
      expect(fs.readdirSync(tmp).filter((n) => n.startsWith(`kill-${k}.`))).toEqual([]);
    }
    console.log(`[faults] convert fresh-output kills: ${outcomes.join(', ')} (full run ${full.ms} ms)`);
    // Most delays fall inside the run, or the test would prove nothing.
    expect(killed).toBeGreaterThanOrEqual(6);
  }, 120_000);

  it('SIGKILL while writing into an existing directory: the old state or the new one, never a torn file', async () => {
    const next = rng(7);
    const out = path.join(tmp, 'existing');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'notes.txt'), 'keep me');
    const first = await runChild(script, [bin, out, 'overwrite']);
    expect(first.code).toBe(0);
    let killed = 0;
    let window = first.ms;
    for (let k = 0; k < 12 && killed < 3; k++) {
      const r = await runChild(script, [bin, out, 'overwrite'], { killAfterMs: Math.round(window * (0.2 + next(1000) / 1000)) });
      if (r.signal === 'SIGKILL') killed++;
      else window *= 0.8;
      state(out); // complete or absent; a partial model.safetensors fails here
      expect(fs.readFileSync(path.join(out, 'notes.txt'), 'utf8')).toBe('keep me');
    }
    expect(killed).toBeGreaterThanOrEqual(3);
    const again = await runChild(script, [bin, out, 'overwrite']);
    expect(again.code).toBe(0);
    expect(state(out)).toBe('complete');
    expect(fs.readdirSync(out).sort()).toEqual(['model.safetensors', 'notes.txt']);
  }, 120_000);
});
