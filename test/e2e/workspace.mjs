// Builds the e2e fixture workspace in a temp dir: a copy of the small llama fixture (config,
// two shards, index — about 240 KB) from ../shared/fixtures, and specs written here in code.
// Nothing of it lands in the repo.
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';

/** The shared fixtures folder (WEIGHT_SPEC_FIXTURES overrides). */
export function fixturesDir() {
  return path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(REPO_ROOT, '..', 'shared', 'fixtures'));
}

export const GOOD_KEY = 'model.embed_tokens.weight';
export const BAD_KEY = 'model.embed_tokens.weigth';

/** Creates the workspace under `dir`; returns the paths the suites use. */
export function makeWorkspace(dir) {
  const src = path.join(fixturesDir(), 'llama');
  if (!fs.existsSync(path.join(src, 'config.json'))) throw new Error(`e2e: fixtures missing at ${src} (set WEIGHT_SPEC_FIXTURES)`);
  const llama = path.join(dir, 'llama');
  fs.mkdirSync(llama, { recursive: true });
  for (const f of ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']) {
    fs.copyFileSync(path.join(src, f), path.join(llama, f));
    fs.chmodSync(path.join(llama, f), 0o644);
  }
  // A spec with one good and one misspelt key (the server must flag the second as key-missing).
  const spec = {
    files: [{ format: 'safetensors', path: 'llama/model-00001-of-00002.safetensors' }],
    inputs: [
      { location: { file: 0, key: GOOD_KEY }, name: GOOD_KEY },
      { location: { file: 0, key: BAD_KEY }, name: 'model.embed_tokens.weight_b' },
    ],
    model_name: 'tiny-llama',
    version: 5,
  };
  const badSpec = path.join(dir, 'bad.weight_spec.json');
  fs.writeFileSync(badSpec, JSON.stringify(spec, null, 2));
  // The same misspelt key in a folder no test opens: workspace diagnostics must list it anyway.
  const closedSpec = path.join(dir, 'never-opened', 'closed.weight_spec.json');
  fs.mkdirSync(path.dirname(closedSpec), { recursive: true });
  fs.writeFileSync(
    closedSpec,
    JSON.stringify({ ...spec, files: [{ format: 'safetensors', path: '../llama/model-00001-of-00002.safetensors' }] }, null, 2),
  );
  fs.mkdirSync(path.join(dir, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(dir, '.vscode', 'settings.json'), JSON.stringify({ 'weightSpec.defaultDtype': 'float32' }, null, 2));
  return { dir, llama, badSpec, closedSpec, goodKey: GOOD_KEY, badKey: BAD_KEY, reference: path.join(src, 'reference.json') };
}
