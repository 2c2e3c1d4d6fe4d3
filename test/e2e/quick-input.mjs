// VS Code's quick input (Quick Open, the command palette) driven from Playwright: the one place
// the e2e checks open it, type into it and pick a row.
//
// Why a helper of its own: three ways a scripted palette failed on fresh clones, each once.
// (1) A webview that holds the keyboard swallows Ctrl+P, and Escape does not close a picker
//     left open, so the next `keyboard.type` went into the webview while a stale input was
//     "visible" ("Format Document" and "Reopen Editor With…" rows never came).
// (2) Quick Open's file index can miss a file written a moment ago.
// (3) Under load the first list can take longer than one short wait.
// So: Quick Open is opened by a click on the title bar's command center (the mouse reaches the
// workbench whatever holds the keyboard), the text is put into the input element itself (`fill`, which focuses it), never typed
// into whatever has the focus; the input is checked to hold that text; and the whole sequence
// is tried up to three times from a closed picker.

/** The quick input's text box (the widget holds other inputs: the select-all checkbox). */
const INPUT = '.quick-input-widget .quick-input-box input';

/**
 * Focuses the workbench's editor area (the Problems panel may hold the focus): the active tab
 * when there is one, since a click into a viewer gives the keyboard to its webview frame, where
 * Ctrl+P does not reach the workbench.
 */
export async function focusWorkbench(page) {
  const tab = page.locator('.part.editor .tab.active').first();
  if (await tab.isVisible().catch(() => false)) await tab.click().catch(() => {});
  else
    await page
      .locator('.part.editor')
      .click({ position: { x: 300, y: 200 } })
      .catch(() => {});
}

/** Closes an open quick input (by its own Escape, when the keyboard is elsewhere). */
async function closeQuickInput(page) {
  const input = page.locator(INPUT).first();
  for (let i = 0; i < 3 && (await input.isVisible().catch(() => false)); i++) {
    await input.press('Escape').catch(() => {});
    await page.waitForTimeout(100);
  }
}

/**
 * Opens Quick Open by a click on the title bar's command center (the mouse reaches the workbench
 * whatever holds the keyboard: a webview that has the focus swallows Ctrl+P, as the DeepSeek-V3
 * viewer did under load); by `key` where the window has no command center.
 */
async function openQuickInput(page, key) {
  const center = page.locator('.titlebar .command-center .command-center-center').first();
  if (key === 'Control+P' && (await center.isVisible().catch(() => false))) {
    await page.mouse.move(1, 1);
    await center.click({ timeout: 5_000 });
    return;
  }
  await focusWorkbench(page);
  await page.keyboard.press('Escape');
  await page.keyboard.press(key);
}

/**
 * Opens the quick input (Quick Open: `key` Control+P), puts `text` in it and waits for a row
 * matching `pick` (a string or RegExp, as Playwright's `hasText`); returns that row's locator.
 * Throws after three tries, naming what was looked for.
 */
export async function quickInputRow(page, { key = 'Control+P', text, pick, timeoutMs = 15_000 }) {
  let last;
  for (let attempt = 1; attempt <= 3; attempt++) {
    await closeQuickInput(page);
    const input = page.locator(INPUT).first();
    try {
      await openQuickInput(page, attempt === 3 ? key : 'Control+P');
      await input.waitFor({ state: 'visible', timeout: 15_000 });
      await input.fill(text, { timeout: 10_000 });
      const held = await input.inputValue();
      if (held !== text) throw new Error(`the quick input holds ${JSON.stringify(held)}, not ${JSON.stringify(text)}`);
      const row = page.locator('.quick-input-list .monaco-list-row', { hasText: pick }).first();
      await row.waitFor({ state: 'visible', timeout: timeoutMs * attempt });
      return row;
    } catch (e) {
      last = e;
      // Said in the log, so that a run shows how often a try is needed (and which step failed).
      console.log(`      (quick input, try ${attempt} for ${JSON.stringify(text)}: ${String(e?.message ?? e).split('\n')[0]})`);
    }
  }
  throw new Error(`the quick input showed no row ${String(pick)} for ${JSON.stringify(text)} in 3 tries: ${last?.message ?? last}`);
}

/** Runs the command whose palette row matches `pick` (default: its title). */
export async function palette(page, title, pick = title) {
  const row = await quickInputRow(page, { text: `>${title}`, pick });
  // Off any hover an earlier step left, which would take the click.
  await page.mouse.move(1, 1);
  await row.click();
}

/** Opens the file `name` through Quick Open and waits for its editor tab. */
export async function quickOpen(page, name, { timeoutMs = 15_000 } = {}) {
  await quickInputRow(page, { text: name, pick: name, timeoutMs });
  await page.keyboard.press('Enter');
  await page.waitForSelector(`.tab[aria-label*="${name}"]`, { timeout: 15_000 });
}
