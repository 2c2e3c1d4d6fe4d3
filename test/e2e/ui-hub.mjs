/* global document -- the waitForFunction callback runs in the page */
// The "Export Model" pick of the user's Hugging Face cache (issue 37), in the real VS Code:
// a cache laid out as huggingface_hub writes it (models--org--name/{blobs,refs,snapshots},
// snapshot files as relative symlinks to blobs) is named by HF_HUB_CACHE when code-server
// starts; the pick lists its model with size, model_type and support, plus "Browse…", and
// picking it exports from the snapshot (the report records the id, revision and commit).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fixturesDir } from './workspace.mjs';
import { keepScreenshot, runCommand } from './ui-editor.mjs';

export const HUB_ID = 'e2e-org/tiny-llama';
const COMMIT = 'c'.repeat(40);

/** Lays out the cache with the llama fixture as HUB_ID at refs/main; returns the cache folder. */
export function makeHubCache(dir) {
  const cache = path.join(dir, 'hf-hub');
  const repo = path.join(cache, `models--${HUB_ID.replace('/', '--')}`);
  const snap = path.join(repo, 'snapshots', COMMIT);
  fs.mkdirSync(path.join(repo, 'blobs'), { recursive: true });
  fs.mkdirSync(snap, { recursive: true });
  fs.mkdirSync(path.join(repo, 'refs'), { recursive: true });
  const src = path.join(fixturesDir(), 'llama');
  for (const f of ['config.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json']) {
    const bytes = fs.readFileSync(path.join(src, f));
    const sha = crypto.createHash('sha256').update(bytes).digest('hex');
    fs.writeFileSync(path.join(repo, 'blobs', sha), bytes);
    fs.symlinkSync(path.join('..', '..', 'blobs', sha), path.join(snap, f));
  }
  fs.writeFileSync(path.join(repo, 'refs', 'main'), COMMIT);
  return cache;
}

/** The check: run by ui-check.mjs with its `check(title, fn)`. */
export async function hubPickCheck(page, ws, { check, dir }) {
  await check(
    'Export Model offers the models of the Hugging Face cache (size, model_type, support) and exports one by id (screenshot)',
    async () => {
      await page.keyboard.press('Escape');
      await runCommand(page, 'Weight Spec: Export Weight-Free ONNX');
      const mode = page.locator('.quick-input-list .monaco-list-row', { hasText: 'From a model folder' }).first();
      await mode.waitFor({ state: 'visible', timeout: 15_000 });
      await mode.click();
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: HUB_ID }).first();
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      const text = (await row.innerText()).replace(/\s+/g, ' ');
      if (!/llama/.test(text) || !/supported/.test(text) || !/KiB|MiB/.test(text))
        throw new Error(`the cached model's row reads "${text}"`);
      const browse = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Browse…' });
      if ((await browse.count()) !== 1) throw new Error('no "Browse…" entry');
      const shot = path.join(dir, 'hub-pick.png');
      await page.screenshot({ path: shot });
      keepScreenshot(shot);
      await row.click();
      // the output folder: the workspace (never beside the snapshot, inside the cache). Wait for
      // the output prompt itself: the model picker's own (empty) input can still be on screen
      await page.locator('.quick-input-widget', { hasText: 'Output folder' }).waitFor({ state: 'visible', timeout: 15_000 });
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 15_000 });
      await page.waitForFunction(() => (document.querySelector('.quick-input-widget input')?.value ?? '') !== '', null, {
        timeout: 15_000,
      });
      const out = await input.inputValue();
      if (!out.startsWith(ws.dir)) throw new Error(`the proposed output ${out} is not in the workspace ${ws.dir}`);
      await page.keyboard.press('Enter');
      const report = path.join(out, 'export-report.json');
      const deadline = Date.now() + 60_000;
      // Export claims the folder with a report in state "writing" first and completes it last.
      const complete = () => {
        try {
          return JSON.parse(fs.readFileSync(report, 'utf8')).state === 'complete';
        } catch {
          return false;
        }
      };
      while (!complete()) {
        if (Date.now() > deadline) throw new Error(`no complete ${report} after the export`);
        await page.waitForTimeout(250);
      }
      const hub = JSON.parse(fs.readFileSync(report, 'utf8')).source?.hub;
      if (hub?.id !== HUB_ID || hub?.commit !== COMMIT) throw new Error(`report.source.hub is ${JSON.stringify(hub)}`);
      return `row "${text.slice(0, 90)}"; exported to ${path.basename(out)} with hub ${hub.id}@${hub.revision}`;
    },
  );
}
