/* global document, window, getComputedStyle -- the evaluate callbacks run in the webview frame */
// Issue 36's viewer points as a user meets them (called by viewers-ui.mjs inside the
// code-server + Chromium session): a click on model.onnx opens the ONNX viewer; its summary
// folds, jumps by anchor, shows the KV cache of the 30B MoE export as one row per run and links
// to the spec, the checkpoint and the Problems panel; the checkpoint table in a narrow pane
// keeps key ends, shard labels and readable bytes, scrolls sideways and copies whole keys; the
// filter matches parts of keys with whole numbers, globs and /regex/; Format Document on a weight_spec.json writes
// QEfficient's layout (README "JSON tools"). Screenshots go to test/e2e/screenshots/.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';
import { explorerOpen, frameShowing, palette, SCREENSHOT_DIR, shoot, webviewFrame } from './viewers-ui.mjs';

const CONFIGS = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(REPO_ROOT, '..', 'shared', 'fixtures'), '..', 'configs');

const closeAll = (page) => palette(page, 'Close All Editors', /Close All Editors/).catch(() => {});

/** Runs the checks through `check(title, fn)`; `extensionRoot` holds the CLI that exports. */
export async function viewerNavChecks(page, ws, check, { extensionRoot = REPO_ROOT, tensors }) {
  const cli = (args) => execFileSync(process.execPath, [path.join(extensionRoot, 'dist', 'cli.js'), ...args], { stdio: 'pipe' });
  // The 30B MoE export (config only: 48 layers, 128 experts, no weights needed).
  const q30 = path.join(ws.dir, 'q30-model');
  fs.mkdirSync(q30, { recursive: true });
  fs.copyFileSync(path.join(CONFIGS, 'qwen3-30b-a3b.json'), path.join(q30, 'config.json'));
  cli(['export', '--config', q30, '--out', path.join(ws.dir, 'q30-export')]);
  cli(['export', '--config', ws.llama, '--out', path.join(ws.dir, 'nav-llama')]);
  await closeAll(page);

  // The 30B export's viewer, opened by a click in the explorer (each check opens it itself).
  const openQ30 = async () => {
    await closeAll(page);
    await explorerOpen(page, 'q30-export', 'model.onnx');
    return frameShowing(page, 'model.onnx', 'nav.toc', '4250 nodes');
  };
  await check('a click on model.onnx in the explorer opens the ONNX viewer, not the binary-file warning (screenshot)', async () => {
    const frame = await openQ30();
    const editor = await page.locator('.part.editor').innerText();
    if (/binary|unsupported text encoding/i.test(editor)) throw new Error(`the editor shows: ${editor.slice(0, 300)}`);
    const shot = path.join(SCREENSHOT_DIR, 'onnx-default-editor.png');
    await page.locator('.part.editor').screenshot({ path: shot });
    return shoot(shot, await frame.locator('body').innerText(), ['Summary', 'Graph', 'past_key.{0..47}']);
  });

  await check(
    'the ONNX summary folds, jumps by anchor, shows the KV cache in one row and the spec problems on top (screenshots)',
    async () => {
      const frame = await openQ30();
      const text = await frame.locator('body').innerText();
      for (const w of [
        'past_key.{0..47}',
        'past_value.{0..47}',
        'past_key.{0..47}_RetainedState',
        '[batch_size, 4, ctx_len, 128]',
        'The embedded spec has',
        'not-prepared',
        'Open weight_spec.json',
        'Show the Problems panel',
      ])
        if (!text.includes(w)) throw new Error(`the summary lacks ${JSON.stringify(w)}: ${text.slice(0, 800)}`);
      const rows = await frame.locator('#inputs tbody tr').count();
      if (rows !== 4) throw new Error(`the inputs table has ${rows} rows (want input_ids, position_ids and two KV runs)`);
      // The problems are one click from the top; the banner comes before the first section.
      const order = await frame.evaluate(() => {
        const b = document.querySelector('.banner');
        const m = document.querySelector('#model');
        return !!b && !!m && (b.compareDocumentPosition(m) & 4) !== 0; // DOCUMENT_POSITION_FOLLOWING
      });
      if (!order) throw new Error('the problem banner is not above the sections');
      const top = path.join(SCREENSHOT_DIR, 'onnx-summary-nav.png');
      await page.locator('.part.editor').screenshot({ path: top });
      const a = shoot(top, text, ['past_key.{0..47}', 'The embedded spec has']);
      // Fold and unfold a section.
      await frame.locator('#inputs > summary').click();
      if (await frame.locator('#inputs').evaluate((d) => d.open)) throw new Error('Inputs did not fold');
      await frame.locator('#inputs > summary').click();
      // The anchor scrolls the problems into view.
      await frame.locator('.banner a').click();
      await frame.waitForFunction(
        () => {
          const r = document.querySelector('#spec-problems')?.getBoundingClientRect();
          return !!r && r.top >= -2 && r.top < window.innerHeight / 2;
        },
        null,
        { timeout: 10_000 },
      );
      const probs = path.join(SCREENSHOT_DIR, 'onnx-summary-problems.png');
      await page.locator('.part.editor').screenshot({ path: probs });
      const b = shoot(probs, await frame.locator('#spec-problems').innerText(), ['not-prepared']);
      // The links: the spec beside, then the Problems panel.
      await frame.locator('a.open-spec').click();
      await page
        .locator('.editor-group-container')
        .nth(1)
        .locator('.tab.active[aria-label*="weight_spec.json"]')
        .waitFor({ timeout: 30_000 });
      await frame.locator('a.open-problems').click();
      await page.locator('.markers-panel').waitFor({ state: 'visible', timeout: 15_000 });
      return `${a}; after the anchor: ${b}; spec opened beside, Problems panel shown`;
    },
  );

  await check("the ONNX summary's checkpoint link opens the source checkpoint in the safetensors viewer", async () => {
    await closeAll(page);
    await explorerOpen(page, 'nav-llama', 'model.onnx');
    // (Other exports of the same model have viewers too: its spec link names its folder.)
    const f = await frameShowing(page, 'model.onnx', 'a.open-spec[title*="nav-llama"]', 'Open the source checkpoint');
    const label = await f.locator('a.open-checkpoint').innerText();
    await f.locator('a.open-checkpoint').click();
    // Opened beside the viewer, in the safetensors viewer.
    await page
      .locator('.editor-group-container')
      .nth(1)
      .locator('.tab.active[aria-label*="model-00001-of-00002.safetensors"]')
      .waitFor({ timeout: 30_000 });
    const ck = await webviewFrame(page, 'model-00001-of-00002.safetensors', '.vt-foot');
    await ck.waitForFunction(() => document.querySelector('.vt-foot')?.textContent?.startsWith('total:'), null, { timeout: 30_000 });
    return `"${label}" opened ${(await ck.locator('.vt-foot').innerText()).slice(0, 60)}`;
  });

  await check(
    'the checkpoint table in a narrow pane: key ends, shard labels, readable bytes, sideways scroll, whole-key copy, segment filter (screenshot)',
    async () => {
      await closeAll(page);
      const size = page.viewportSize();
      await page.setViewportSize({ width: 820, height: size?.height ?? 800 });
      try {
        await explorerOpen(page, 'sparse-20k', 'model-00007-of-00016.safetensors');
        const f = await webviewFrame(page, 'model-00007-of-00016.safetensors', '.vt-foot');
        const total = (n) =>
          f.waitForFunction((k) => document.querySelector('.vt-foot')?.textContent?.startsWith(`total: ${k} tensors`), n, {
            timeout: 30_000,
          });
        await total(tensors.length);
        const filter = f.locator('input[type=text]');
        const placeholder = await filter.getAttribute('placeholder');
        if (!placeholder?.includes('*') || !placeholder.includes('/regex/')) throw new Error(`placeholder: ${placeholder}`);
        const layers = tensors.filter((t) => t.key.endsWith('.experts.0.up_proj.weight')).length;
        // Whole numbers: expert 12's three projections per layer, not experts 120–127.
        await filter.fill('experts.12');
        await total(layers * 3);
        const keys = await f.locator('.vt-row .key').evaluateAll((els) => els.map((e) => e.getAttribute('data-full')));
        if (keys.some((k) => !k.includes('.experts.12.')))
          throw new Error(`experts.12 shows ${keys.find((k) => !k.includes('.experts.12.'))}`);
        const cells = await f
          .locator('.vt-row')
          .first()
          .evaluate((r) => {
            const s = [...r.children];
            return {
              key: s[0].textContent,
              full: s[0].getAttribute('data-full'),
              title: s[0].getAttribute('title'),
              bytes: s[3].textContent,
              align: getComputedStyle(s[3]).textAlign,
              shard: s[4].textContent,
              shardTitle: s[4].getAttribute('title'),
            };
          });
        // Whole, or cut in the middle keeping the end (the key column has a minimum width; the rest scrolls).
        const [head, tail] = cells.key.split('…');
        const kept = tail !== undefined && cells.full.startsWith(head) && cells.full.endsWith(tail) && tail.endsWith('.weight');
        if (cells.key !== cells.full && !kept) throw new Error(`the key cell shows ${cells.key} for ${cells.full}`);
        if (cells.title !== cells.full) throw new Error(`the key's title is ${cells.title}`);
        if (!/^\d+(\.\d)? (B|KiB|MiB|GiB)$/.test(cells.bytes) || cells.align !== 'right')
          throw new Error(`bytes cell ${cells.bytes} (${cells.align})`);
        if (!/^\d{5}$/.test(cells.shard) || !cells.shardTitle.includes(cells.shard))
          throw new Error(`shard cell ${cells.shard} (${cells.shardTitle})`);
        const scroll = await f.locator('.vt').evaluate((v) => ({ sw: v.scrollWidth, cw: v.clientWidth }));
        if (scroll.sw <= scroll.cw) throw new Error(`the table does not scroll sideways (${scroll.sw} ≤ ${scroll.cw})`);
        // Copy a key's text: the clipboard gets the whole key.
        const copied = await f
          .locator('.vt-row .key')
          .first()
          .evaluate((k) => {
            let got = '';
            window.addEventListener('copy', (e) => (got = e.clipboardData.getData('text/plain')), { once: true });
            const r = document.createRange();
            r.selectNodeContents(k);
            const sel = document.getSelection();
            sel.removeAllRanges();
            sel.addRange(r);
            document.execCommand('copy');
            sel.removeAllRanges();
            return got;
          });
        if (copied !== cells.full) throw new Error(`copy gave ${JSON.stringify(copied)}, not ${cells.full}`);
        const shot = path.join(SCREENSHOT_DIR, 'safetensors-narrow.png');
        await page.screenshot({ path: shot });
        const shown = shoot(shot, await f.locator('body').innerText(), [`${layers * 3} of ${tensors.length} shown`, '.weight', 'BF16']);
        // A glob within the segment and a regex.
        await filter.fill('experts.12*.down_proj');
        await total(layers * 9);
        await filter.fill('/experts\\.12[0-3]\\.up_proj/');
        await total(layers * 4);
        await filter.fill('/experts.(12/');
        await f.waitForFunction(() => /unterminated|group/i.test(document.querySelector('.toolbar .summary')?.textContent ?? ''), null, {
          timeout: 10_000,
        });
        return `${shown}; key cell "${cells.key}", bytes "${cells.bytes}" right-aligned, shard "${cells.shard}", table ${scroll.sw}px in ${scroll.cw}px; experts.12 → ${layers * 3}, experts.12* → ${layers * 9}, regex → ${layers * 4}`;
      } finally {
        if (size) await page.setViewportSize(size);
      }
    },
  );

  await check("Format Document on a weight_spec.json writes QEfficient's layout: sorted keys, indent 2 (screenshot)", async () => {
    await closeAll(page);
    const dir = path.join(ws.dir, 'fmt-ui');
    fs.mkdirSync(dir, { recursive: true });
    // Keys out of order, on one line.
    const spec = {
      version: 5,
      inputs: [{ name: ws.goodKey, location: { key: ws.goodKey, file: 0 } }],
      files: [{ path: '../llama/model-00001-of-00002.safetensors', format: 'safetensors' }],
    };
    const file = path.join(dir, 'weight_spec.json');
    fs.writeFileSync(file, JSON.stringify(spec));
    await explorerOpen(page, 'fmt-ui', 'weight_spec.json');
    const mode = await page.locator('[id="status.editor.mode"]').innerText();
    if (!/Weight Spec/.test(mode)) throw new Error(`language mode ${mode}`);
    await palette(page, 'Format Document', /^Format Document(?! With)/);
    await page.waitForFunction(() => document.querySelectorAll('.part.editor .view-line').length >= 10, null, { timeout: 30_000 });
    const shot = path.join(SCREENSHOT_DIR, 'json-format.png');
    await page.locator('.part.editor').screenshot({ path: shot });
    // The rendered lines in their on-screen order (Monaco reuses line elements).
    const lines = (
      await page
        .locator('.part.editor .view-line')
        .evaluateAll((els) => els.map((e) => [parseFloat(e.style.top) || 0, e.textContent ?? '']).sort((a, b) => a[0] - b[0]))
    )
      .map((l) => l[1])
      .join('\n');
    const shown = shoot(shot, lines, ['"files"', '"inputs"', '"version"']);
    const at = (k) => lines.indexOf(`"${k}"`);
    if (!(at('files') < at('inputs') && at('inputs') < at('version'))) throw new Error(`keys are not sorted: ${lines.slice(0, 300)}`);
    if (!/\n {2}"files": \[/.test(lines.replace(/\u00a0/g, ' '))) throw new Error(`not indented by 2: ${lines.slice(0, 300)}`);
    await palette(page, 'File: Revert File', /Revert File/).catch(() => {});
    return `${shown}; language mode "${mode}"`;
  });
  await closeAll(page);
}
