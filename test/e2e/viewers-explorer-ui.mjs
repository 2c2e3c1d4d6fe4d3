/* global document -- the waitForFunction callbacks run in the webview frame */
// The rest of issue 36 as a user meets it (called by viewers-ui.mjs inside the code-server +
// Chromium session): the graph explorer labels inner edges with inferred shapes on request (a
// weight-free export has no value_info); its checkpoint link opens the checkpoint viewer
// scrolled to the tensor's row, highlighted; an export folder deleted from disk leaves the
// Problems panel and the Weight Spec tree without a reload. Each check removes what it made
// (later checks read the Problems panel). Screenshots go to test/e2e/screenshots/.
import fs from 'node:fs';
import path from 'node:path';
import { clearProblemsFilter, filterProblems } from './problems-filter.mjs';
import { explorerOpen, frameShowing, palette, SCREENSHOT_DIR, shoot, webviewFrame } from './viewers-ui.mjs';

/**
 * Closes every editor: the palette's Close All Editors, then, tab by tab, whatever it left (the
 * palette's keystroke can go to a webview that holds the keyboard, as the explorer's canvas does
 * after a keyboard walk, and the next open would then only refocus the old viewer).
 */
export async function closeAll(page) {
  await palette(page, 'Close All Editors', /Close All Editors/).catch(() => {});
  const tabs = page.locator('.tabs-container .tab');
  for (let i = 0; i < 8; i++) {
    const n = await tabs.count();
    if (n === 0) return;
    await tabs.first().click();
    await page.keyboard.press('Control+W');
    await page.waitForFunction((k) => document.querySelectorAll('.tabs-container .tab').length < k, n, { timeout: 5_000 }).catch(() => {});
  }
}

/** Opens `folder/model.onnx`'s Graph tab; returns the frame, its canvas and side panel. */
export async function openGraph(page, folder) {
  await closeAll(page);
  await explorerOpen(page, folder, 'model.onnx');
  const frame = await frameShowing(page, 'model.onnx', `a.open-spec[title*="${folder}"]`, 'Embedded weight spec');
  await frame.locator('button.tab', { hasText: 'Graph' }).click();
  const canvas = frame.locator('canvas.gx-canvas');
  await canvas.waitFor({ timeout: 30_000 });
  await frame.waitForFunction(() => document.querySelector('canvas.gx-canvas')?.dataset.zoom, null, { timeout: 30_000 });
  return { frame, canvas, panel: frame.locator('.gx-panel') };
}

/**
 * Waits for the checkpoint viewer of shard file `name` to be the active tab and show `key`'s row
 * highlighted and in view (a link or F12 revealed it); returns the viewer's frame.
 */
export async function revealedTensor(page, name, key) {
  await page.locator(`.tab.active[aria-label*="${name}"]`).first().waitFor({ timeout: 30_000 });
  const ck = await webviewFrame(page, name, '.vt-foot');
  await ck.waitForFunction(
    (k) => {
      const row = document.querySelector('.vt-row.revealed');
      const body = document.querySelector('.vt-body')?.getBoundingClientRect();
      const r = row?.getBoundingClientRect();
      return row?.querySelector('.key')?.getAttribute('data-full') === k && body && r && r.top >= body.top && r.bottom <= body.bottom;
    },
    key,
    { timeout: 30_000 },
  );
  return ck;
}

/** Searches `name` and waits for the side panel of the node it jumps to (`op`). */
export async function jump(frame, name, op) {
  const search = frame.locator('input.gx-search');
  await search.fill(name);
  await search.press('Enter');
  await frame.locator('.gx-panel h3', { hasText: op }).waitFor({ timeout: 15_000 });
}

/** Runs the checks through `check(title, fn)`; `ws.dir/ui-export` is the llama export viewers-ui.mjs wrote. */
export async function explorerLinkChecks(page, ws, check) {
  await check('the graph explorer labels inner edges with inferred shapes on request (screenshot)', async () => {
    const { frame, canvas, panel } = await openGraph(page, 'ui-export');
    await jump(frame, 'model.layers.0.self_attn.q_proj.weight', 'Gemm');
    // The Gemm's output has no value_info in the file: its shape is inferred, and says so.
    const text = await panel.innerText();
    if (!/inner · F32 \[batch_size\*seq_len, \d+\] \(inferred\)/.test(text))
      throw new Error(`the Gemm's output shows no inferred shape: ${text.slice(0, 800)}`);
    if (Number(await canvas.getAttribute('data-edge-labels')) !== 0) throw new Error('edge labels drawn before they were asked for');
    await frame.locator('label[for="gx-shapes"]').click();
    await frame.waitForFunction(() => Number(document.querySelector('canvas.gx-canvas').dataset.edgeLabels) > 5, null, { timeout: 15_000 });
    const n = Number(await canvas.getAttribute('data-edge-labels'));
    const sample = await canvas.getAttribute('data-edge-sample');
    if (!/seq_len/.test(sample ?? '')) throw new Error(`the edge labels name no symbolic dim: ${sample}`);
    const shot = path.join(SCREENSHOT_DIR, 'onnx-graph-shapes.png');
    await page.locator('.part.editor').screenshot({ path: shot });
    await frame.locator('label[for="gx-shapes"]').click();
    return `${shoot(shot, `${text}\n${sample}`, ['(inferred)', 'seq_len'])}; ${n} edge labels drawn, e.g. ${sample?.slice(0, 160)}`;
  });

  await check(
    "the explorer's checkpoint link opens the checkpoint viewer scrolled to the tensor's row, highlighted (screenshot)",
    async () => {
      // ui-export's model beside a spec whose files are the llama checkpoint in the workspace (the
      // export's own names a prepared checkpoint that does not exist yet).
      const dir = path.join(ws.dir, 'gx-link');
      fs.mkdirSync(dir, { recursive: true });
      try {
        fs.copyFileSync(path.join(ws.dir, 'ui-export', 'model.onnx'), path.join(dir, 'model.onnx'));
        const spec = JSON.parse(fs.readFileSync(path.join(ws.dir, 'ui-export', 'weight_spec.json'), 'utf8'));
        const index = JSON.parse(fs.readFileSync(path.join(ws.llama, 'model.safetensors.index.json'), 'utf8')).weight_map;
        const shards = [...new Set(Object.values(index))].sort();
        spec.files = shards.map((s) => ({ format: 'safetensors', path: `../llama/${s}` }));
        for (const i of spec.inputs) i.location = { ...i.location, file: shards.indexOf(index[i.location.key]) };
        fs.writeFileSync(path.join(dir, 'weight_spec.json'), JSON.stringify(spec, null, 2));
        const { frame, panel } = await openGraph(page, 'gx-link');
        /** Follows the checkpoint link of `key`'s consumer; returns the highlighted row of the viewer it opens. */
        const follow = async (key) => {
          await jump(frame, key, /Gemm|Gather|Mul/);
          await panel.locator('a', { hasText: key }).first().click();
          const shard = index[key];
          const ck = await revealedTensor(page, shard, key);
          return { ck, shard, rows: await ck.locator('.vt-row.revealed').count() };
        };
        const last = Object.keys(index)
          .filter((k) => /layers\.\d+\.mlp\.down_proj\.weight$/.test(k))
          .sort()
          .pop();
        const tabLabels = () => page.locator('.tab').evaluateAll((ts) => ts.map((t) => t.getAttribute('aria-label')));
        const shardTabs = (shard) => page.locator(`.tab[aria-label*="${shard}"]`).count();
        if ((await shardTabs(index[last])) !== 0)
          throw new Error(`tabs left open before the first link: ${JSON.stringify(await tabLabels())}`);
        const a = await follow(last);
        const firstTabs = await shardTabs(a.shard);
        const shot = path.join(SCREENSHOT_DIR, 'checkpoint-revealed.png');
        await page.locator('.part.editor').screenshot({ path: shot });
        const shown = shoot(shot, await a.ck.locator('.vt-row.revealed').innerText(), [last]);
        // The viewer is open now: a second link scrolls it (scrolled away first) to another key.
        await a.ck.locator('.vt-body').evaluate((b) => (b.scrollTop = b.scrollHeight));
        // …and a filter that hides the key is cleared.
        await a.ck.locator('input[type=text]').fill('lm_head');
        await a.ck.waitForFunction(() => document.querySelector('.vt-foot')?.textContent?.startsWith('total: 1 tensor'), null, {
          timeout: 15_000,
        });
        const other = Object.keys(index).find((k) => index[k] === a.shard && k !== last && /self_attn\.q_proj\.weight$/.test(k));
        const b = await follow(other);
        if (b.rows !== 1) throw new Error(`${b.rows} rows highlighted after the second link`);
        // …in the viewer already open, not a second one in a new group.
        const tabs = await page.locator(`.tab[aria-label*="${a.shard}"]`).count();
        if (tabs !== 1)
          throw new Error(
            `${tabs} tabs of ${a.shard} after the second link (the open viewer was not reused; ${firstTabs} after the first); tabs: ${JSON.stringify(await tabLabels())}`,
          );
        const filterLeft = await b.ck.locator('input[type=text]').inputValue();
        if (filterLeft) throw new Error(`the filter still reads ${JSON.stringify(filterLeft)}`);
        return `${shown}; ${last} highlighted in ${a.shard}; the open viewer, filtered to lm_head, then scrolled to ${other} with the filter cleared`;
      } finally {
        await closeAll(page);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  await check('an export folder deleted from disk leaves Problems and the Weight Spec tree without a reload (screenshot)', async () => {
    const dir = path.join(ws.dir, 'gone-export');
    fs.mkdirSync(dir, { recursive: true });
    const spec = {
      files: [{ format: 'safetensors', path: 'ck/model.safetensors' }],
      inputs: [{ location: { file: 0, key: 'w' }, name: 'w' }],
      version: 5,
    };
    fs.writeFileSync(path.join(dir, 'weight_spec.json'), JSON.stringify(spec, null, 2));
    try {
      // Opened in an editor (VS Code keeps a deleted file's editor open, its text kept).
      await explorerOpen(page, 'gone-export', 'weight_spec.json');
      // Problems, filtered to the folder: its file-missing error shows.
      const markers = await filterProblems(page, 'gone-export', (timeout) =>
        page.locator('.markers-panel .monaco-list-row', { hasText: 'file-missing' }).first().waitFor({ state: 'visible', timeout }),
      );
      // The tree, in its own container (clicked until it shows: a click on the active one hides it).
      const tree = page.locator('.part.sidebar');
      const title = tree.locator('.composite.title', { hasText: /weight spec/i }).first();
      for (let i = 0; i < 3 && !(await title.isVisible().catch(() => false)); i++) {
        await page.locator('.activitybar .action-item a[aria-label^="Weight Spec"]').first().click();
        await title.waitFor({ state: 'visible', timeout: 5_000 }).catch(() => {});
      }
      const row = tree.locator('.monaco-list-row', { hasText: 'gone-export' });
      await row.first().waitFor({ state: 'visible', timeout: 60_000 });
      const before = path.join(SCREENSHOT_DIR, 'deleted-spec-before.png');
      await page.screenshot({ path: before });
      shoot(before, `${await tree.innerText()}\n${await markers.innerText()}`, ['gone-export', 'file-missing']);
      // The whole folder removed, as `rm -rf` does.
      fs.rmSync(dir, { recursive: true, force: true });
      await row.first().waitFor({ state: 'detached', timeout: 30_000 });
      await markers.locator('.monaco-list-row', { hasText: 'file-missing' }).first().waitFor({ state: 'detached', timeout: 30_000 });
      const shot = path.join(SCREENSHOT_DIR, 'deleted-spec.png');
      await page.screenshot({ path: shot });
      const problems = await markers.innerText();
      const shown = shoot(shot, `${await tree.innerText()}\n${problems}`, []);
      if (problems.includes('gone-export')) throw new Error(`Problems still lists the deleted spec: ${problems.slice(0, 300)}`);
      await clearProblemsFilter(page);
      return `${shown}; the tree row and the Problems rows went without a reload`;
    } catch (e) {
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'deleted-spec-failure.png') }).catch(() => {});
      throw e;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await closeAll(page);
      await clearProblemsFilter(page);
      await page.keyboard.press('Control+Shift+E');
    }
  });
}
