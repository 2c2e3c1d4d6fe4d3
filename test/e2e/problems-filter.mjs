// The Problems panel's own filter, driven from Playwright: the one place the e2e checks narrow
// Problems to a folder and wait for its rows.
//
// Why a helper of its own: once on a fresh clone (code-server), a check filled the filter and
// waited 90 s for Problems to show only the filtered folder's rows, while the rows themselves
// were there (the failure's screenshot lists them). A text put into the filter that did not
// take is waited out like a slow server. So the filter is the Problems view's own input (in the
// panel's title, the visible one: the Debug Console's has the same placeholder), its value is
// read back, and when the rows do not come the text is put in again, up to three times, each
// retry logged (`(problems filter, try N …)`) so that a run shows how often one is needed.

/** The Problems view's filter input (the Debug Console's filter shares its placeholder's start). */
const FILTER = '.part.panel .viewpane-filter input[placeholder*="**/node_modules/**"]';

/** Shows the Problems panel (Ctrl+Shift+M toggles it: pressed only when it is not showing). */
export async function showProblems(page) {
  const panel = page.locator('.markers-panel');
  if (!(await panel.isVisible())) await page.keyboard.press('Control+Shift+M');
  await panel.waitFor({ state: 'visible', timeout: 15_000 });
  return panel;
}

/**
 * Filters Problems to `text` and waits for `ready(timeoutMs)` (which resolves once the rows the
 * check needs are there, or rejects): up to three tries of `triesMs` each, the filter's text
 * put in afresh on each.
 */
export async function filterProblems(page, text, ready, triesMs = 30_000) {
  const panel = await showProblems(page);
  const input = page.locator(FILTER).first();
  let last;
  for (let attempt = 1; attempt <= 3; attempt++) {
    await input.fill('');
    await input.fill(text);
    const value = await input.inputValue();
    try {
      if (value !== text) throw new Error(`the filter holds "${value}"`);
      await ready(triesMs);
      return panel;
    } catch (e) {
      last = e;
      const shown = (await panel.innerText().catch(() => '')).replace(/\s+/g, ' ').slice(0, 300);
      console.log(`  (problems filter, try ${attempt} of 3: "${text}" → filter "${value}"; panel: ${shown})`);
    }
  }
  throw last;
}

/** Clears the Problems filter (a check leaves the panel as it found it). */
export async function clearProblemsFilter(page) {
  await page
    .locator(FILTER)
    .first()
    .fill('')
    .catch(() => {});
}
