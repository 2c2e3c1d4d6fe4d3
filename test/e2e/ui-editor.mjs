// The editor features a user sees in the installed .vsix (issue 19), driven in code-server by
// Playwright with real keys: Problems listing a spec that was never opened (workspace
// diagnostics), the "Weight Spec" explorer tree, the Run input flow with its result in the
// output channel, and the Getting Started walkthrough. Each check takes a screenshot, checks
// it shows the expected text, and keeps it in test/e2e/screenshots/ (git-ignored; CI keeps it
// as an artifact).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './harness.mjs';
import { explorerRow, SCREENSHOT_DIR } from './viewers-ui.mjs';
import { clearProblemsFilter, filterProblems } from './problems-filter.mjs';
import { palette } from './quick-input.mjs';

/** Copies `file` into the run's screenshot folder (viewers-ui.mjs SCREENSHOT_DIR). */
export function keepScreenshot(file) {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  fs.copyFileSync(file, path.join(SCREENSHOT_DIR, path.basename(file)));
}

/**
 * Before code-server starts: an export of the workspace's llama, prepared and compiled by the
 * CLI (so the tree has a compiled export and Run has something to run), and the setting that
 * points the installed extension at this checkout's onnxruntime-node.
 */
export function prepareEditorWorkspace(ws) {
  const cli = path.join(REPO_ROOT, 'dist', 'cli.js');
  // A copy of the model: its prepared checkpoint must not be the one of ws.llama, whose exports
  // other checks expect unprepared.
  const model = path.join(ws.dir, 'llama-run');
  fs.cpSync(ws.llama, model, { recursive: true });
  const exportDir = path.join(ws.dir, 'llama-export');
  for (const args of [
    ['export', '--config', model, '--out', exportDir],
    ['prepare', '--checkpoint', model, '--dtype', 'float32'],
    ['compile', exportDir],
  ]) {
    execFileSync(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  }
  // A graph with its weights embedded (the fixture's legacy export): Export is offered on it.
  fs.mkdirSync(path.join(ws.dir, 'legacy-graph'), { recursive: true });
  fs.copyFileSync(path.join(path.dirname(ws.reference), 'legacy.onnx'), path.join(ws.dir, 'legacy-graph', 'legacy.onnx'));
  // onnxruntime-node for Run comes from code-server's User settings (harness.mjs), as a user sets it.
  return { exportDir };
}

/** Throws unless `text` contains every string of `want`. */
function expectText(text, want, what) {
  const missing = want.filter((w) => !text.includes(w));
  if (missing.length) throw new Error(`${what} lacks ${JSON.stringify(missing)}: ${JSON.stringify(text.slice(-1500))}`);
}

/** Runs a command by its title through the command palette, as a user types it. */
export async function runCommand(page, title) {
  await palette(page, title);
}

/** The editor checks; `check(title, fn)` counts each one (ui-check.mjs). Each starts from no open picker. */
export async function editorUiChecks(page, ws, { check, dir }) {
  const shotOf = (name) => path.join(dir, name);
  const checkClean = (title, fn) =>
    check(title, async () => {
      await page.keyboard.press('Escape');
      try {
        return await fn();
      } finally {
        await page.keyboard.press('Escape');
      }
    });

  await checkClean('Problems lists the error of a spec that was never opened (workspace diagnostics, screenshot)', async () => {
    const shot = shotOf('problems-closed-file.png');
    // The panel's own filter narrows it to the closed spec's folder: earlier checks' exports (the
    // 30B one lists 50 shards as related rows) can push its row out of the virtualized list's view.
    const panel = await filterProblems(page, path.basename(path.dirname(ws.closedSpec)), (timeout) =>
      page
        .locator('.markers-panel .monaco-list-row', { hasText: path.basename(ws.closedSpec) })
        .first()
        .waitFor({ state: 'visible', timeout }),
    );
    await panel.locator('.monaco-list-row', { hasText: ws.badKey }).first().waitFor({ state: 'visible', timeout: 30_000 });
    const tabs = await page.locator(`.tab[aria-label*="${path.basename(ws.closedSpec)}"]`).count();
    if (tabs !== 0) throw new Error('the closed spec has an editor tab: it must never have been opened');
    await page.locator('.part.panel').screenshot({ path: shot });
    const text = await panel.innerText();
    await clearProblemsFilter(page);
    expectText(text, [path.basename(ws.closedSpec), ws.badKey, 'key-missing'], 'the Problems panel');
    keepScreenshot(shot);
    return `panel: ${JSON.stringify(
      text
        .split('\n')
        .filter((l) => l.includes('closed') || l.includes(ws.badKey))
        .slice(0, 3),
    )}`;
  });

  await checkClean(
    'the "Weight Spec" view, in its own activity-bar container, lists the export with its graph, spec, checkpoint and compile state (screenshot)',
    async () => {
      const shot = shotOf('tree.png');
      // Its own container (issue 36): an activity-bar icon opens a side bar that holds only this
      // tree, so its labels get the side bar's whole width instead of sharing the explorer.
      const icon = page.locator('.activitybar .action-item a[aria-label^="Weight Spec"]').first();
      await icon.waitFor({ state: 'visible', timeout: 30_000 });
      const sidebar = page.locator('.part.sidebar');
      const title = sidebar.locator('.composite.title', { hasText: /weight spec/i }).first();
      // Clicked until it shows: a click on the container already showing hides the side bar.
      for (let i = 0; i < 3 && !(await title.isVisible().catch(() => false)); i++) {
        await icon.click();
        await title.waitFor({ state: 'visible', timeout: 10_000 }).catch(() => {});
      }
      await title.waitFor({ state: 'visible', timeout: 30_000 });
      if (await sidebar.locator('.explorer-folders-view').count()) throw new Error('the Weight Spec container also shows the explorer');
      const pane = sidebar;
      await pane.locator('.monaco-list-row', { hasText: 'llama-export' }).first().waitFor({ state: 'visible', timeout: 60_000 });
      await pane.locator('.monaco-list-row', { hasText: 'up to date' }).first().waitFor({ state: 'visible', timeout: 30_000 });
      await pane.screenshot({ path: shot });
      const text = await pane.innerText();
      expectText(
        text,
        ['llama-export', 'compiled', 'model.onnx', 'weight_spec.json', 'checkpoint', 'prepared', 'compile', 'up to date'],
        'the Weight Spec view',
      );
      // No label is cut ("weight…"): each row's label fits its row.
      const cut = await pane
        .locator('.monaco-list-row .label-name')
        .evaluateAll((els) => els.filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent));
      if (cut.length) throw new Error(`cut labels in the Weight Spec view: ${JSON.stringify(cut)}`);
      keepScreenshot(shot);
      return JSON.stringify(text.split('\n').slice(0, 12));
    },
  );

  await checkClean(
    'the explorer offers "Export Weight-Free ONNX…" on a graph with weights, not on a weight-free one (context menus)',
    async () => {
      // The explorer, shown by command (Ctrl+Shift+E toggles the focus when it is there already).
      await runCommand(page, 'View: Show Explorer');
      const folders = page.locator('.pane-header', { hasText: path.basename(ws.dir) }).first();
      if ((await folders.getAttribute('aria-expanded')) === 'false') await folders.click();
      /** The labels of the context menu of `file` in folder `dir` (found as explorerOpen finds a file). */
      const menuOf = async (dir, file) => {
        const row = await explorerRow(page, dir, file);
        const menu = page.locator('.monaco-menu').first();
        // Our group is there once the menu is complete (Inspect File is offered on every .onnx).
        // The menu can open before the explorer has settled (the right click then lands on a row
        // that is being replaced, whose menu lacks it): as ui-check.mjs's Prepare check does,
        // close it and try again, up to three times.
        for (let attempt = 1; ; attempt++) {
          await page.keyboard.press('Escape');
          await row.click({ button: 'right' });
          await menu.waitFor({ state: 'visible', timeout: 15_000 });
          const ok = await menu
            .locator('.action-label', { hasText: 'Inspect File' })
            .first()
            .waitFor({ timeout: 10_000 })
            .then(
              () => true,
              () => false,
            );
          if (ok) break;
          if (attempt === 3)
            throw new Error(`${dir}/${file}: the context menu lacks Inspect File after 3 tries: ${await menu.innerText().catch(() => '')}`);
        }
        const labels = await menu.locator('.action-label').allInnerTexts();
        await page.keyboard.press('Escape');
        return labels.map((l) => l.trim()).filter(Boolean);
      };
      const legacy = await menuOf('legacy-graph', 'legacy.onnx');
      if (!legacy.includes('Export Weight-Free ONNX…')) throw new Error(`legacy.onnx's menu lacks Export: ${JSON.stringify(legacy)}`);
      const free = await menuOf('llama-export', 'model.onnx');
      if (free.includes('Export Weight-Free ONNX…')) throw new Error(`the weight-free model.onnx offers Export: ${JSON.stringify(free)}`);
      // Give the room back to the Weight Spec view (the next check clicks its items).
      if ((await folders.getAttribute('aria-expanded')) === 'true') await folders.click();
      return `legacy.onnx: ${JSON.stringify(legacy.filter((l) => /Export|Inspect/.test(l)))}; model.onnx: ${JSON.stringify(free.filter((l) => /Export|Inspect/.test(l)))}`;
    },
  );

  await checkClean(
    'Run asks for ids and max new tokens, then shows ids, time to first token and tokens/s in the output channel, onnxruntime-node from code-server User settings (screenshot)',
    async () => {
      const shot = shotOf('run-output.png');
      // The export's spec as the active editor (Run works on it), opened from the tree's item.
      await page.locator('.activitybar .action-item a[aria-label^="Weight Spec"]').first().click();
      const pane = page.locator('.part.sidebar');
      await pane.locator('.monaco-list-row', { hasText: 'llama-export' }).first().waitFor({ state: 'visible', timeout: 30_000 });
      const rows = pane.locator('.monaco-list-row');
      const labels = await rows.allInnerTexts();
      const at = labels.findIndex((l) => l.startsWith('llama-export'));
      const spec = labels.findIndex((l, i) => i > at && l.startsWith('weight_spec.json'));
      if (at < 0 || spec < 0) throw new Error(`the tree shows no llama-export/weight_spec.json: ${JSON.stringify(labels)}`);
      await rows.nth(spec).click();
      await page.locator('.tab[aria-label*="weight_spec.json"]').first().waitFor({ timeout: 15_000 });
      await runCommand(page, 'Weight Spec: Run');
      const title = page.locator('.quick-input-widget .quick-input-title');
      await title.filter({ hasText: '(1/2)' }).waitFor({ timeout: 15_000 });
      await page.keyboard.type('1, 15, 7');
      await page.keyboard.press('Enter');
      await title.filter({ hasText: '(2/2)' }).waitFor({ timeout: 15_000 });
      await page.keyboard.press('Control+A');
      await page.keyboard.type('3');
      await page.keyboard.press('Enter');
      const panel = page.locator('.part.panel');
      // The summary's last line (the CLI's own stats line, streamed before it, also says tokens/s).
      await panel.filter({ hasText: '(3 tokens)' }).waitFor({ timeout: 120_000 });
      await panel.screenshot({ path: shot });
      // Monaco draws spaces as no-break spaces.
      const text = (await panel.innerText()).replace(/\u00a0/g, ' ');
      expectText(text, ['input ids:', '1, 15, 7', 'output ids:', 'time to first token:', 'tokens/s:', '(3 tokens)'], 'the output channel');
      keepScreenshot(shot);
      return JSON.stringify(text.split('\n').filter((l) => /ids:|first token|tokens\/s/.test(l)));
    },
  );

  await checkClean('the Getting Started walkthrough opens with its export → prepare → compile → run steps (screenshot)', async () => {
    const shot = shotOf('walkthrough.png');
    await runCommand(page, 'Welcome: Open Walkthrough');
    await page.keyboard.type('Weight Spec');
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Get Started with Weight Spec' }).first();
    await row.waitFor({ state: 'visible', timeout: 15_000 });
    // Enter on the (only, focused) row: a hover left by an earlier step can sit over it and take a click.
    await page.keyboard.press('Enter');
    const page1 = page.locator('.gettingStartedContainer', { hasText: 'Get Started with Weight Spec' }).first();
    await page1.waitFor({ state: 'visible', timeout: 30_000 });
    await page.locator('.part.editor').screenshot({ path: shot });
    const text = await page1.innerText();
    // Leave no page open that a later click could land on (its buttons run commands).
    await runCommand(page, 'View: Close All Editors');
    expectText(
      text,
      ['Get Started with Weight Spec', 'Pick a model folder', 'Export a weight-free ONNX', 'Prepare the checkpoint', 'Compile', 'Run'],
      'the walkthrough',
    );
    keepScreenshot(shot);
    return JSON.stringify(text.split('\n').filter(Boolean).slice(0, 8));
  });
}
