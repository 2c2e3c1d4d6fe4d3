/* global document -- the waitForFunction callback runs in the workbench page */
// Issue 50 in the real VS Code (called by viewers-ui.mjs inside the code-server + Chromium
// session): a checkpoint row's Statistics (min/max/mean/std, histogram, first values) computed
// from the file, compared with NumPy reading the same file; the same Statistics from the graph
// explorer's side panel for a Gemm's weight (the tensor its spec maps it to); and a spec whose prepared folder
// does not exist (viewers-nav-ui.mjs's 30B export, q30-export: 50 shards) as one Problems row, without a row per shard.
// Screenshots go to test/e2e/screenshots/.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { clearProblemsFilter, filterProblems } from './problems-filter.mjs';
import { closeAll, jump, openGraph } from './viewers-explorer-ui.mjs';
import { explorerOpen, palette, SCREENSHOT_DIR, shoot, webviewFrame } from './viewers-ui.mjs';

/** min/max/mean/std of tensor `key` of `file` by NumPy (its own header parse and bf16 decode). */
function numpyStats(file, key) {
  const py = String.raw`
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8 + n])[sys.argv[2]]
b = raw[8 + n + h['data_offsets'][0]:8 + n + h['data_offsets'][1]]
d = h['dtype']
v = (np.frombuffer(b, '<u2').astype(np.uint32) << 16).view(np.float32) if d == 'BF16' else np.frombuffer(b, '<f4' if d == 'F32' else '<f2')
v = v.astype(np.float64)
print(json.dumps({'min': v.min(), 'max': v.max(), 'mean': v.mean(), 'std': v.std()}))
`;
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', py, file, key]).toString());
}

/** Throws unless the `min … · max … · mean … · std …` line of `text` is NumPy's `ref` to the six digits shown. */
function sameAsNumpy(text, ref, file) {
  const m = /min (\S+) · max (\S+) · mean (\S+) · std (\S+)/.exec(text);
  if (!m) throw new Error(`no statistics line: ${text}`);
  const got = { min: Number(m[1]), max: Number(m[2]), mean: Number(m[3]), std: Number(m[4]) };
  for (const k of ['min', 'max', 'mean', 'std']) {
    // Six significant digits on screen.
    if (Math.abs(got[k] - ref[k]) > 1e-5 * Math.abs(ref[k]) + 1e-9) throw new Error(`${k} ${got[k]} on screen, NumPy ${ref[k]} (${file})`);
  }
  return got;
}

/**
 * `ws.dir/<name>`: ui-export's model.onnx beside its spec rewritten to name the workspace's llama
 * shards (ui-export's own spec names a prepared folder that does not exist at this point).
 */
function exportOnCheckpoint(ws, name) {
  const dir = path.join(ws.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.copyFileSync(path.join(ws.dir, 'ui-export', 'model.onnx'), path.join(dir, 'model.onnx'));
  const spec = JSON.parse(fs.readFileSync(path.join(ws.dir, 'ui-export', 'weight_spec.json'), 'utf8'));
  const index = JSON.parse(fs.readFileSync(path.join(ws.llama, 'model.safetensors.index.json'), 'utf8')).weight_map;
  const shards = [...new Set(Object.values(index))].sort();
  spec.files = shards.map((s) => ({ format: 'safetensors', path: path.relative(dir, path.join(ws.llama, s)).split(path.sep).join('/') }));
  for (const i of spec.inputs) i.location = { ...i.location, file: shards.indexOf(index[i.location.key]) };
  fs.writeFileSync(path.join(dir, 'weight_spec.json'), JSON.stringify(spec, null, 2));
  return dir;
}

/** Runs the checks through `check(title, fn)`; `ws.dir/q30-export` is viewers-nav-ui.mjs's unprepared 30B export. */
export async function tensorValueChecks(page, ws, check) {
  await check(
    "a checkpoint row's Statistics: min, max, mean, std, histogram and first values, as NumPy reads the file (screenshot)",
    async () => {
      const name = 'model-00001-of-00002.safetensors';
      // The 30B graph before this holds the keyboard (Quick Open's Ctrl+P went to its canvas):
      // close every editor tab by tab, then open the shard with clicks.
      await closeAll(page);
      await explorerOpen(page, path.basename(ws.llama), name);
      const frame = await webviewFrame(page, name, '.vt-foot');
      const filter = frame.locator('input[aria-label="Filter tensors"]');
      await filter.fill(ws.goodKey);
      const cell = frame.locator(`.vt-row .key[data-full="${ws.goodKey}"]`).first();
      await cell.waitFor({ timeout: 15_000 });
      await cell.click();
      await frame.locator('.tensor-values button', { hasText: 'Statistics' }).click();
      await frame.locator('.tensor-values .stats-line').first().waitFor({ timeout: 60_000 });
      const text = await frame.locator('.tensor-values').innerText();
      const bars = await frame.locator('.tensor-values .histogram span').count();
      const shot = path.join(SCREENSHOT_DIR, 'tensor-statistics.png');
      await page.locator('.part.editor').screenshot({ path: shot });
      const shown = shoot(shot, text, [ws.goodKey, 'first values:', 'no NaN or inf']);
      // The page's own summary line ends with the checkpoint's folder.
      const summary = await frame.locator('p.summary').first().innerText();
      const file = path.join(summary.split(' · ').pop().trim(), name);
      const got = sameAsNumpy(text, numpyStats(file, ws.goodKey), file);
      if (bars !== 32) throw new Error(`the histogram has ${bars} bars, not 32`);
      await filter.fill('');
      // Leave the window as found: no viewer open, the explorer's folders collapsed.
      await closeAll(page);
      await palette(page, 'Collapse Folders in Explorer', /Collapse Folders in Explorer/).catch(() => {});
      return `${shown}; ${JSON.stringify(got)} = NumPy's to 6 digits, ${bars} histogram bars`;
    },
  );

  await check(
    "the graph panel's Statistics of a Gemm's weight: min, max, mean, std as NumPy reads its checkpoint tensor (screenshot)",
    async () => {
      const dir = exportOnCheckpoint(ws, 'gx-stats');
      try {
        const { frame, panel } = await openGraph(page, 'gx-stats');
        await jump(frame, 'model.layers.0.self_attn.q_proj.weight', /Gemm|MatMul/);
        // The weight input's block: its checkpoint link names the key, and the file as its title.
        const block = panel
          .locator('.gx-value')
          .filter({ has: frame.locator('.gx-values') })
          .first();
        const ckLink = block
          .locator('div', { hasText: /^checkpoint: / })
          .locator('a')
          .first();
        const key = (await ckLink.innerText()).trim();
        const file = await ckLink.getAttribute('title');
        await block.locator('.gx-values a', { hasText: 'Statistics' }).click();
        await block.locator('.gx-stats .stats-line, .gx-stats .error-line').first().waitFor({ timeout: 60_000 });
        const text = await block.locator('.gx-stats').innerText();
        if (await block.locator('.gx-stats .error-line').count()) throw new Error(`the panel's Statistics of ${key} failed: ${text}`);
        const bars = await block.locator('.gx-stats .histogram span').count();
        const shot = path.join(SCREENSHOT_DIR, 'graph-panel-statistics.png');
        await page.locator('.part.editor').screenshot({ path: shot });
        const shown = shoot(shot, text, [key, 'first values:', 'no NaN or inf']);
        const got = sameAsNumpy(text, numpyStats(file, key), file);
        if (bars !== 32) throw new Error(`the panel's histogram has ${bars} bars, not 32`);
        return `${shown}; ${key}: ${JSON.stringify(got)} = NumPy's to 6 digits, ${bars} histogram bars`;
      } finally {
        await closeAll(page);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  await check('a spec whose prepared folder does not exist is one Problems row, not one per shard (screenshot)', async () => {
    try {
      // Until the filter has applied (other specs' not-prepared rows are there before it does)
      // and the server has checked the spec.
      const panel = await filterProblems(page, 'q30-export', (timeout) =>
        page.waitForFunction(
          () => {
            const t = document.querySelector('.markers-panel')?.innerText ?? '';
            return (
              t.includes('q30-export') && t.includes('not-prepared') && !t.includes('ui-export') && !t.includes('bad.weight_spec.json')
            );
          },
          null,
          { timeout },
        ),
      );
      const rows = await panel.locator('.monaco-list-row').allInnerTexts();
      const shot = path.join(SCREENSHOT_DIR, 'problems-not-prepared.png');
      await page.locator('.part.panel').screenshot({ path: shot });
      const text = rows.join('\n');
      const shown = shoot(shot, text, ['not-prepared', 'all 50 shards missing']);
      const warnings = rows.filter((r) => r.includes('not-prepared'));
      const perShard = rows.filter((r) => r.includes('missing: '));
      if (warnings.length !== 1 || perShard.length !== 0)
        throw new Error(`${warnings.length} not-prepared rows and ${perShard.length} per-shard rows: ${text.slice(0, 1500)}`);
      return `${shown}; rows: ${JSON.stringify(rows.map((r) => r.replace(/\s+/g, ' ').slice(0, 160)))}`;
    } finally {
      await clearProblemsFilter(page);
    }
  });
}
