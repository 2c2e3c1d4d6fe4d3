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

/** A VLM of the cache (the llava fixture): its export is two graphs, whose specs Export opens. */
export const HUB_VLM_ID = 'e2e-org/tiny-llava';

/** Puts fixture `name`'s `files` into the cache as `id` at refs/main (blobs + relative snapshot links). */
function cacheModel(cache, id, name, files) {
  const repo = path.join(cache, `models--${id.replace('/', '--')}`);
  const snap = path.join(repo, 'snapshots', COMMIT);
  fs.mkdirSync(path.join(repo, 'blobs'), { recursive: true });
  fs.mkdirSync(snap, { recursive: true });
  fs.mkdirSync(path.join(repo, 'refs'), { recursive: true });
  const src = path.join(fixturesDir(), name);
  for (const f of files) {
    const bytes = fs.readFileSync(path.join(src, f));
    const sha = crypto.createHash('sha256').update(bytes).digest('hex');
    fs.writeFileSync(path.join(repo, 'blobs', sha), bytes);
    fs.symlinkSync(path.join('..', '..', 'blobs', sha), path.join(snap, f));
  }
  fs.writeFileSync(path.join(repo, 'refs', 'main'), COMMIT);
}

/** Lays out the cache with the llama fixture as HUB_ID and the llava one as HUB_VLM_ID; returns the cache folder. */
export function makeHubCache(dir) {
  const cache = path.join(dir, 'hf-hub');
  const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors', 'model.safetensors.index.json'];
  cacheModel(cache, HUB_ID, 'llama', ['config.json', ...shards]);
  cacheModel(cache, HUB_VLM_ID, 'llava', ['config.json', 'preprocessor_config.json', 'processor_config.json', ...shards]);
  return cache;
}

/**
 * Picks `id` in Export Model's list of the cache and accepts the proposed output folder (in the
 * workspace); returns the row's text and the folder once export-report.json is complete.
 */
async function exportFromCache(page, ws, id, { shot, reportIn = '.' } = {}) {
  await page.keyboard.press('Escape');
  await runCommand(page, 'Weight Spec: Export Weight-Free ONNX');
  const mode = page.locator('.quick-input-list .monaco-list-row', { hasText: 'From a model folder' }).first();
  await mode.waitFor({ state: 'visible', timeout: 15_000 });
  await mode.click();
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: id }).first();
  await row.waitFor({ state: 'visible', timeout: 15_000 });
  const text = (await row.innerText()).replace(/\s+/g, ' ');
  const browse = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Browse…' });
  if ((await browse.count()) !== 1) throw new Error('no "Browse…" entry');
  if (shot) {
    await page.screenshot({ path: shot });
    keepScreenshot(shot);
  }
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
  // A VLM export is two graphs, each with its report (vlm.json, written last, ties them).
  const report = path.join(out, reportIn, 'export-report.json');
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
  return { text, out, report: JSON.parse(fs.readFileSync(report, 'utf8')) };
}

/** Lines of every log file under `dir` (code-server's own and its extension host's) that contain `needle`. */
function logLinesWith(dir, needle) {
  // No extension-host log read would make the check pass for nothing.
  if (!fs.existsSync(dir)) throw new Error(`no logs folder ${dir}`);
  const hits = [];
  let exthostLogs = 0;
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.log')) {
        if (/^(remote)?exthost\.log$/.test(e.name)) exthostLogs++;
        for (const l of fs.readFileSync(p, 'utf8').split('\n')) if (l.includes(needle)) hits.push(`${e.name}: ${l}`);
      }
    }
  };
  walk(dir);
  if (exthostLogs === 0) throw new Error(`no extension-host log under ${dir}`);
  return hits;
}

/** The check: run by ui-check.mjs with its `check(title, fn)`. */
export async function hubPickCheck(page, ws, { check, dir }) {
  await check(
    'Export Model offers the models of the Hugging Face cache (size, model_type, support) and exports one by id (screenshot)',
    async () => {
      const shot = path.join(dir, 'hub-pick.png');
      const { text, out, report } = await exportFromCache(page, ws, HUB_ID, { shot });
      if (!/llama/.test(text) || !/supported/.test(text) || !/KiB|MiB/.test(text))
        throw new Error(`the cached model's row reads "${text}"`);
      const hub = report.source?.hub;
      if (hub?.id !== HUB_ID || hub?.commit !== COMMIT) throw new Error(`report.source.hub is ${JSON.stringify(hub)}`);
      return `row "${text.slice(0, 90)}"; exported to ${path.basename(out)} with hub ${hub.id}@${hub.revision}`;
    },
  );
  await check(
    'Export Model on a VLM of the cache opens both graphs\' specs, with no "Could NOT open editor" in the logs (screenshot)',
    async () => {
      const { text, out } = await exportFromCache(page, ws, HUB_VLM_ID, { reportIn: 'language' });
      if (!/llava/.test(text)) throw new Error(`the cached VLM's row reads "${text}"`);
      // Both specs open, one after the other: two weight_spec.json tabs, which VS Code tells
      // apart by their folders (each tab's description: …/language, …/vision).
      const tabs = page.locator('.tabs-container .tab');
      const deadline = Date.now() + 30_000;
      let titles = [];
      const shows = (g) =>
        titles.some((t) => t.replace(/\s/g, '').includes('weight_spec.json') && new RegExp(`(^|[/\\s…])${g}(\\s|$)`).test(t));
      for (;;) {
        titles = await tabs.evaluateAll((els) => els.map((e) => e.innerText.replace(/\s+/g, ' ').trim()));
        if (shows('language') && shows('vision')) break;
        if (Date.now() > deadline) throw new Error(`the open tabs read ${JSON.stringify(titles)}: not both specs (language/, vision/)`);
        await page.waitForTimeout(250);
      }
      for (const g of ['language', 'vision'])
        if (!fs.existsSync(path.join(out, g, 'weight_spec.json'))) throw new Error(`no ${g}/weight_spec.json`);
      const shot = path.join(dir, 'vlm-export-specs.png');
      await page.screenshot({ path: shot });
      keepScreenshot(shot);
      // The error went to the extension host's log (an unawaited open's rejection) and to the
      // workbench's: none of code-server's logs may hold it.
      await page.waitForTimeout(1500); // an unhandled rejection is logged after one second
      const hits = logLinesWith(path.join(dir, 'profile', 'user-data', 'logs'), 'Could NOT open editor');
      if (hits.length) throw new Error(`the logs hold ${hits.length} "Could NOT open editor" lines: ${hits[0]}`);
      return `tabs ${JSON.stringify(titles.filter((t) => t.replace(/\s/g, '').includes('weight_spec.json')))}; no "Could NOT open editor" in the logs`;
    },
  );
}
