// Issue 50's navigation as a user meets it in the packaged extension (called by viewers-ui.mjs
// inside the code-server + Chromium session), each with a screenshot kept as a CI artefact, on
// `llama-export`: the export ui-editor.mjs ran through export → prepare → compile with the CLI,
// so its spec's own `files[].path` name the prepared shards (through the link compile made).
// - the graph panel's checkpoint link after export → prepare opens the prepared shard in the
//   checkpoint viewer at the tensor's row;
// - F12 on a key in weight_spec.json does the same from the text editor;
// - completion inside a key offers a key that lives in the other shard;
// - a tensor clicked in the Weight Spec tree opens the spec at the input that reads it.
// What the checks expect is read from the files here (the spec, the shards' own headers), never
// from the extension.
import fs from 'node:fs';
import path from 'node:path';
import { closeAll, jump, openGraph, revealedTensor } from './viewers-explorer-ui.mjs';
import { explorerOpen, palette, SCREENSHOT_DIR, shoot } from './viewers-ui.mjs';

const EXPORT = 'llama-export';

/** The keys of a safetensors file, from its own header (8-byte length, then JSON). */
function shardKeys(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    fs.readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE());
    const json = Buffer.alloc(n);
    fs.readSync(fd, json, 0, n, 8);
    return Object.keys(JSON.parse(json.toString('utf8'))).filter((k) => k !== '__metadata__');
  } finally {
    fs.closeSync(fd);
  }
}

/** The export's spec text and, per input, its key, its file index and the shard path (resolved from the export). */
function specOf(ws) {
  const file = path.join(ws.dir, EXPORT, 'weight_spec.json');
  const text = fs.readFileSync(file, 'utf8');
  const spec = JSON.parse(text);
  const shards = spec.files.map((f) => path.resolve(ws.dir, EXPORT, f.path));
  for (const s of shards) if (!fs.existsSync(s)) throw new Error(`${EXPORT}'s spec names ${s}, which does not exist: not prepared?`);
  return { file, text, spec, shards };
}

/** Line and column (1-based) of character `offset` of `text`. */
function lineColOf(text, offset) {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, col: before[before.length - 1].length + 1 };
}

/** Opens the export's spec in the text editor, with the cursor at character `offset` (Go to Line). */
async function specAt(page, text, offset) {
  await closeAll(page);
  await explorerOpen(page, EXPORT, 'weight_spec.json');
  await page.locator('.part.editor .monaco-editor .view-lines').first().click();
  const { line, col } = lineColOf(text, offset);
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input').first();
  await input.waitFor({ state: 'visible', timeout: 15_000 });
  await input.fill(`:${line}:${col}`);
  await input.press('Enter');
  await page.locator('.quick-input-widget input').first().waitFor({ state: 'hidden', timeout: 15_000 });
  // The status bar says where the cursor is: check it landed there.
  await page
    .locator('.statusbar-item', { hasText: `Ln ${line}, Col ${col}` })
    .first()
    .waitFor({ timeout: 15_000 });
}

/**
 * Clicks the row of the Weight Spec tree at `names` (one label per level, from an export down:
 * each looked for among the children of the one before), waiting for it to show.
 */
async function clickTreeRow(page, names) {
  const rows = page.locator('.part.sidebar .monaco-list-row');
  const t0 = Date.now();
  for (;;) {
    const i = await rows.evaluateAll((els, want) => {
      const byIndex = els.map((e) => [Number(e.getAttribute('data-index')), e]).sort((a, b) => a[0] - b[0]);
      let depth = 0;
      for (const [i, e] of byIndex) {
        const level = Number(e.getAttribute('aria-level'));
        const name = e.querySelector('.label-name')?.textContent?.trim();
        if (level < depth + 1) return -1; // left the subtree of the row matched last
        if (level === depth + 1 && name === want[depth]) {
          if (++depth === want.length) return i;
        }
      }
      return -1;
    }, names);
    if (i >= 0) {
      await page.locator(`.part.sidebar .monaco-list-row[data-index="${i}"]`).click();
      return;
    }
    if (Date.now() - t0 > 30_000) {
      const seen = await rows.evaluateAll((els) =>
        els.map((e) => `${e.getAttribute('aria-level')}:${e.querySelector('.label-name')?.textContent}`),
      );
      throw new Error(`the Weight Spec tree shows no ${names.join(' › ')}; rows: ${JSON.stringify(seen.slice(0, 30))}`);
    }
    await page.waitForTimeout(250);
  }
}

/** Runs the checks through `check(title, fn)`. */
export async function specNavChecks(page, ws, check) {
  await check("after export → prepare, the graph panel's checkpoint link opens the prepared shard at the tensor (screenshot)", async () => {
    const { spec, shards } = specOf(ws);
    const input = spec.inputs.find((i) => /layers\.1\.self_attn\.q_proj\.weight$/.test(i.location.key));
    const shard = shards[input.location.file];
    try {
      const { frame, panel } = await openGraph(page, EXPORT);
      await jump(frame, input.name, 'Gemm');
      const text = await panel.innerText();
      if (!text.includes(path.basename(path.dirname(shard))))
        throw new Error(`the panel names no prepared folder ${path.basename(path.dirname(shard))}: ${text.slice(0, 600)}`);
      if (/not on disk/.test(text)) throw new Error(`the panel says the tensor is not on disk: ${text.slice(0, 600)}`);
      await panel.locator('a', { hasText: input.location.key }).first().click();
      const ck = await revealedTensor(page, path.basename(shard), input.location.key);
      const shot = path.join(SCREENSHOT_DIR, 'prepared-checkpoint-link.png');
      await page.locator('.part.editor').screenshot({ path: shot });
      return `${shoot(shot, await ck.locator('.vt-row.revealed').innerText(), [input.location.key])}; ${input.location.key} highlighted in ${path.relative(ws.dir, shard)}`;
    } finally {
      await closeAll(page);
    }
  });

  await check('F12 on a key of weight_spec.json opens the checkpoint viewer at its tensor (screenshot)', async () => {
    const { text, spec, shards } = specOf(ws);
    // An input of the second shard: F12 has to pick the right file, not the first.
    const input = spec.inputs.find((i) => i.location.file === 1);
    if (!input) throw new Error(`${EXPORT}'s spec has no input in its second file`);
    const at = text.indexOf(`"key": "${input.location.key}"`);
    if (at < 0) throw new Error(`no "key": "${input.location.key}" in the spec text`);
    try {
      await specAt(page, text, at + 8 + 4);
      await page.keyboard.press('F12');
      const ck = await revealedTensor(page, path.basename(shards[1]), input.location.key);
      const shot = path.join(SCREENSHOT_DIR, 'f12-key.png');
      await page.locator('.part.editor').screenshot({ path: shot });
      return `${shoot(shot, await ck.locator('.vt-row.revealed').innerText(), [input.location.key])}; F12 on ${input.location.key} opened ${path.relative(ws.dir, shards[1])} at its row`;
    } finally {
      await closeAll(page);
    }
  });

  await check("completion inside a key offers the other shard's keys (screenshot)", async () => {
    const { text, spec, shards } = specOf(ws);
    const first = new Set(shardKeys(shards[0]));
    const other = shardKeys(shards[1]).find((k) => !first.has(k) && /layers\.\d+\.mlp\.down_proj\.weight$/.test(k));
    if (!other) throw new Error(`no down_proj key only in ${shards[1]}`);
    const input = spec.inputs.find((i) => i.location.file === 0 && /layers\.\d+\.mlp\./.test(i.location.key));
    const at = text.indexOf(`"key": "${input.location.key}"`) + 8;
    const prefix = other.slice(0, other.indexOf('.mlp.') + 5);
    let shown;
    try {
      await specAt(page, text, at);
      // The key's text selected and replaced by the prefix, as a user retypes it.
      for (let i = 0; i < input.location.key.length; i++) await page.keyboard.press('Shift+ArrowRight');
      await page.keyboard.type(prefix);
      await page.keyboard.press('Control+Space');
      const row = page.locator('.suggest-widget .monaco-list-row', { hasText: other });
      await row.first().waitFor({ state: 'visible', timeout: 30_000 });
      const rows = await page.locator('.suggest-widget .monaco-list-row').evaluateAll((els) => els.map((e) => e.innerText.split('\n')[0]));
      const shot = path.join(SCREENSHOT_DIR, 'completion-other-shard.png');
      await page.locator('.part.editor').screenshot({ path: shot });
      shown = `${shoot(shot, rows.join('\n'), [other])}; typed "${prefix}" in a key of ${path.basename(shards[0])}: ${rows.length} rows, ${other} (only in ${path.basename(shards[1])}) among them`;
    } finally {
      await page.keyboard.press('Escape');
      // The edit is thrown away: the spec on disk stays the export's.
      await palette(page, 'File: Revert File').catch(() => {});
      await closeAll(page);
    }
    if (fs.readFileSync(path.join(ws.dir, EXPORT, 'weight_spec.json'), 'utf8') !== text)
      throw new Error(`${EXPORT}/weight_spec.json changed on disk`);
    return shown;
  });

  await check('a tensor clicked in the Weight Spec tree opens the spec at the input that reads it (screenshot)', async () => {
    const { text, spec } = specOf(ws);
    const input = spec.inputs.find((i) => i.location.key === 'model.layers.1.mlp.down_proj.weight');
    const at = text.indexOf(`"key": "${input.location.key}"`) + 7;
    const { line, col } = lineColOf(text, at);
    try {
      await closeAll(page);
      const icon = page.locator('.activitybar .action-item a[aria-label^="Weight Spec"]').first();
      const title = page.locator('.part.sidebar .composite.title', { hasText: /weight spec/i }).first();
      for (let i = 0; i < 3 && !(await title.isVisible().catch(() => false)); i++) {
        await icon.click();
        await title.waitFor({ state: 'visible', timeout: 5_000 }).catch(() => {});
      }
      await clickTreeRow(page, [EXPORT, 'checkpoint']);
      await clickTreeRow(page, [EXPORT, 'checkpoint', 'layer 1']);
      await clickTreeRow(page, [EXPORT, 'checkpoint', 'layer 1', input.location.key]);
      await page.locator('.tab.active[aria-label*="weight_spec.json"]').first().waitFor({ timeout: 15_000 });
      // The key's string selected, quotes included: the status bar names the cursor (the
      // selection's end) and the length.
      const n = input.location.key.length + 2;
      const want = `Ln ${line}, Col ${col + n} (${n} selected)`;
      await page.locator('.statusbar-item', { hasText: want }).first().waitFor({ timeout: 15_000 });
      const shot = path.join(SCREENSHOT_DIR, 'tree-tensor-spec-entry.png');
      await page.screenshot({ path: shot });
      return `${shoot(shot, `${await page.locator('.part.sidebar').innerText()}\n${want}`, [input.location.key])}; ${want}`;
    } finally {
      await closeAll(page);
      // The explorer back in the side bar, as the checks after this one expect it.
      await page.keyboard.press('Control+Shift+E');
    }
  });
}
