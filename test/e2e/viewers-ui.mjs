/* global document -- the waitForFunction callbacks run in the webview frame */
// The viewers as a user sees them in the packaged extension (called by ui-check.mjs inside its
// code-server + Chromium session): opens a checkpoint shard (the safetensors viewer is its
// default editor) and an export's model.onnx ("Reopen Editor With…" → the ONNX viewer, then
// its Graph tab), reads the text drawn in each webview frame, and keeps screenshots in
// test/e2e/screenshots/ (git-ignored; CI keeps them as artifacts), checked for that text and
// for being drawn (not a blank frame).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';
import { decodePng, pngSize } from './ui-check.mjs';

export const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test', 'e2e', 'screenshots');

/** The webview frame (nested in VS Code's iframes) holding `selector`, once it appears. */
async function webviewFrame(page, selector, timeoutMs = 60_000) {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    for (const f of page.frames()) {
      if (await f.$(selector).catch(() => null)) return f;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no webview frame shows ${selector} within ${timeoutMs / 1000} s`);
}

/** Pixels that differ from the most common color (the background): something is drawn. */
function drawnPixels(file) {
  const img = decodePng(file);
  const counts = new Map();
  for (let i = 0; i < img.px.length; i += 4 * 7) {
    const k = (img.px[i] << 16) | (img.px[i + 1] << 8) | img.px[i + 2];
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const bg = Math.max(...counts.values());
  return [...counts.values()].reduce((a, b) => a + b, 0) - bg;
}

async function quickOpen(page, name) {
  // Focus the editor area first (the Problems panel may hold the focus), as ui-check does.
  await page
    .locator('.part.editor')
    .click({ position: { x: 300, y: 200 } })
    .catch(() => {});
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+P');
  await page.waitForSelector('.quick-input-widget input', { state: 'visible', timeout: 15_000 });
  await page.keyboard.type(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press('Enter');
  await page.waitForSelector(`.tab[aria-label*="${name}"]`, { timeout: 15_000 });
}

function shoot(shot, text, want) {
  for (const w of want) if (!text.includes(w)) throw new Error(`the viewer's text lacks ${JSON.stringify(w)}: ${text.slice(0, 500)}`);
  const size = pngSize(shot);
  if (size.width < 400 || size.height < 200) throw new Error(`screenshot is ${size.width}x${size.height}`);
  const drawn = drawnPixels(shot);
  if (drawn < 500) throw new Error(`the screenshot looks blank (${drawn} sampled non-background pixels): ${shot}`);
  return `${size.width}x${size.height} PNG ${path.relative(REPO_ROOT, shot)}, ${drawn} drawn pixels (sampled)`;
}

/** Runs the viewer checks through `check(title, fn)` of ui-check.mjs. */
export async function viewerChecks(page, ws, uiCheck, { extensionRoot = REPO_ROOT } = {}) {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  // A failing check leaves a screenshot of the whole window beside the others.
  let n = 0;
  const check = (title, fn) =>
    uiCheck(title, async () => {
      n++;
      try {
        return await fn();
      } catch (e) {
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, `viewer-failure-${n}.png`) }).catch(() => {});
        throw e;
      }
    });
  await check('a checkpoint shard opens in the safetensors viewer: tensor table with total and spec links (screenshot)', async () => {
    await quickOpen(page, 'model-00001-of-00002.safetensors');
    const frame = await webviewFrame(page, '.vt-foot');
    await frame.waitForFunction(() => document.querySelector('.vt-foot')?.textContent?.startsWith('total:'), null, { timeout: 30_000 });
    const text = await frame.locator('body').innerText();
    const shot = path.join(SCREENSHOT_DIR, 'safetensors-viewer.png');
    await page.locator('.part.editor').screenshot({ path: shot });
    return shoot(shot, text, [ws.goodKey, 'BF16', 'total:', 'sharded checkpoint', 'model-00002-of-00002.safetensors', 'inputs[0]']);
  });
  await check("an export's model.onnx reopens in the ONNX viewer: summary, embedded spec, laid-out graph (screenshots)", async () => {
    const out = path.join(ws.dir, 'ui-export');
    execFileSync(process.execPath, [path.join(extensionRoot, 'dist', 'cli.js'), 'export', '--config', ws.llama, '--out', out], {
      stdio: 'pipe',
    });
    await quickOpen(page, 'model.onnx');
    await page.keyboard.press('F1');
    await page.waitForSelector('.quick-input-widget input', { state: 'visible', timeout: 15_000 });
    await page.keyboard.type('Reopen Editor With');
    // "View: Reopen Editor With..." (not "…With Text Editor", which matches the typed text too).
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: /Reopen Editor With(\.\.\.|…)/ })
      .first()
      .click({ timeout: 15_000 });
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'ONNX Model Viewer' }).first().click({ timeout: 15_000 });
    const frame = await webviewFrame(page, 'button.tab');
    await frame.getByText('Embedded weight spec').waitFor({ timeout: 30_000 });
    const summary = await frame.locator('body').innerText();
    const shot = path.join(SCREENSHOT_DIR, 'onnx-viewer.png');
    await page.locator('.part.editor').screenshot({ path: shot });
    const a = shoot(shot, summary, [
      'IR version',
      'input_ids',
      'batch_size',
      'logits',
      'layer 0:',
      'Embedded weight spec',
      'not-prepared',
      'com.qti.aisw.extdata',
    ]);
    await frame.locator('button.tab', { hasText: 'Graph' }).click();
    await frame.locator('select').selectOption('layer-0');
    await frame.waitForFunction(
      () => [...document.querySelectorAll('.graph svg text')].some((t) => t.textContent?.includes('q_proj.weight')),
      null,
      { timeout: 30_000 },
    );
    const labels = (await frame.locator('.graph svg text').allTextContents()).join('\n');
    const gshot = path.join(SCREENSHOT_DIR, 'onnx-graph.png');
    await page.locator('.part.editor').screenshot({ path: gshot });
    const b = shoot(gshot, labels, ['q_proj.weight', 'MatMul', 'Softmax']);
    return `${a}; graph: ${b}`;
  });
}
