// Issue 15, points 3 and 7, checked the way a new user meets them: on a fresh clone of the
// committed HEAD (uncommitted changes are not part of it).
//
// 7. `npm ci` prints no warning (no unknown .npmrc key, every install script either allowed
//    or denied in package.json's allowScripts) and still gives a working esbuild (the bundle
//    builds) and onnxruntime-node (it loads).
// 3. On the llama fixture (vocabulary 320), `run` with an id outside the vocabulary fails with
//    exactly one stderr line naming the id and the range (ONNX Runtime's own log silenced),
//    and the README's fixture ids reproduce the reference's greedy tokens.
//
// `npm test` runs it after the suites; it prints a closing `N passed, N failed` line and exits
// non-zero on any failure. The npm cache makes the install local after the first `npm ci`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(repo, '..', 'shared', 'fixtures'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weight-spec-fresh-'));
const clone = path.join(tmp, 'clone');
let passed = 0;
let failed = 0;

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  return { code: r.status ?? (r.signal ? 128 : 1), out: r.stdout ?? '', err: r.stderr ?? '' };
}

function check(name, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || !detail ? '' : `\n     ${detail.trim().split('\n').join('\n     ')}`}`);
  return ok;
}

try {
  const cloned = sh('git', ['clone', '--quiet', '--no-hardlinks', repo, clone]);
  if (!check('git clone of HEAD', cloned.code === 0, cloned.err)) throw new Error('clone failed');

  const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' };
  for (const k of Object.keys(env)) if (k.startsWith('npm_')) delete env[k]; // not the outer `npm test`'s config
  const ci = sh('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: clone, env });
  const noise = (ci.out + ci.err).split('\n').filter((l) => /\bnpm (warn|WARN|ERR)/.test(l));
  check('npm ci succeeds', ci.code === 0, ci.err);
  check('npm ci prints no warning', noise.length === 0, noise.join('\n'));

  const ort = sh(process.execPath, ['-e', "const o = require('onnxruntime-node'); if (!o.InferenceSession) process.exit(3)"], {
    cwd: clone,
  });
  check('onnxruntime-node loads after npm ci', ort.code === 0, ort.err);
  const bundle = sh(process.execPath, ['scripts/bundle.mjs'], { cwd: clone });
  check('esbuild bundles dist/ after npm ci', bundle.code === 0 && fs.existsSync(path.join(clone, 'dist', 'cli.js')), bundle.err);

  if (!fs.existsSync(path.join(fixtures, 'llama', 'config.json'))) {
    if (process.env.CI === 'true') check(`fixtures at ${fixtures}`, false, 'CI=true requires the shared fixtures');
    else console.warn(`[weight-spec] fixtures not found at ${fixtures}: the run checks are skipped`);
  } else {
    const cli = (...args) => sh(process.execPath, [path.join(clone, 'dist', 'cli.js'), ...args], { cwd: tmp });
    const ref = JSON.parse(fs.readFileSync(path.join(fixtures, 'llama', 'reference.json'), 'utf8'));
    const steps = [
      ['export', '--config', path.join(fixtures, 'llama'), '--out', 'exports/llama'],
      ['prepare', '--checkpoint', path.join(fixtures, 'llama'), '--dtype', 'float32', '--out', 'prepared/llama'],
      ['compile', 'exports/llama', '--prepared', 'prepared/llama'],
    ];
    let ready = true;
    for (const s of steps) {
      const r = cli(...s);
      ready = check(`README pipeline: ${s.slice(0, 2).join(' ')}`, r.code === 0, r.err) && ready;
    }
    if (ready) {
      const bad = cli('run', 'exports/llama', '--input-ids', '1,306,4997', '--max-new-tokens', '2');
      const lines = bad.err.split('\n').filter((l) => l !== '');
      check('run with id 4997 (vocab 320): exit 1', bad.code === 1, bad.err);
      check(
        'run with id 4997: exactly one stderr line naming the id and the range, no ONNX Runtime log',
        // eslint-disable-next-line no-control-regex -- an ANSI escape in stderr means ORT logged
        lines.length === 1 && /^weight-spec: token id 4997\b.*0…319/.test(lines[0]) && !/\x1b|onnxruntime/i.test(bad.err),
        bad.err,
      );
      const good = cli(
        'run',
        'exports/llama',
        '--input-ids',
        ref.input_ids.join(','),
        '--max-new-tokens',
        String(ref.generated_ids.length),
      );
      check(
        'README fixture ids give the reference greedy tokens',
        good.code === 0 && good.out.trim() === ref.generated_ids.join(','),
        good.out + good.err,
      );
    }
  }
} catch (e) {
  if (failed === 0) check('fresh clone check', false, String(e));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`fresh-clone-check: ${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
