// The user's view: packages the .vsix (npm run package's vsce call), installs it into a fresh
// code-server with --install-extension, opens the fixture workspace and the spec with a bad key
// in Chromium, opens the Problems panel, screenshots it and checks that our diagnostic is shown.
// Each check prints `✓`/`✗` and counts towards the closing `N passed, N failed`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { REPO_ROOT, codeServerCli, killGroup, launchBrowser, makeProfile, startCodeServer, workbenchUrl } from './harness.mjs';
import { makeWorkspace } from './workspace.mjs';
import { checkVsix, VSCE_PACKAGE_ARGS } from './vsix.mjs';
import { viewerChecks } from './viewers-ui.mjs';
import { quickOpen } from './quick-input.mjs';
import { editorUiChecks, keepScreenshot, prepareEditorWorkspace, runCommand } from './ui-editor.mjs';
import { hubPickCheck, makeHubCache } from './ui-hub.mjs';

/** Width and height from a PNG's IHDR (and that the signature is right). */
export function pngSize(file) {
  const b = fs.readFileSync(file);
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (b.length < 24 || !b.subarray(0, 8).equals(sig) || b.toString('latin1', 12, 16) !== 'IHDR') throw new Error(`${file} is not a PNG`);
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20), bytes: b.length };
}

/** Decodes an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes) into RGBA pixels. */
export function decodePng(file) {
  const b = fs.readFileSync(file);
  const { width, height } = pngSize(file);
  const depth = b[24];
  const colorType = b[25];
  if (depth !== 8 || (colorType !== 2 && colorType !== 6) || b[28] !== 0)
    throw new Error(`${file}: unsupported PNG (depth ${depth}, color type ${colorType})`);
  const idat = [];
  for (let p = 8; p < b.length;) {
    const len = b.readUInt32BE(p);
    const type = b.toString('latin1', p + 4, p + 8);
    if (type === 'IDAT') idat.push(b.subarray(p + 8, p + 8 + len));
    p += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const bpp = colorType === 6 ? 4 : 3;
  const stride = width * bpp;
  const px = Buffer.alloc(width * height * 4);
  const prev = Buffer.alloc(stride);
  const cur = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    raw.copy(cur, 0, y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? cur[i - bpp] : 0;
      const up = prev[i];
      const c = i >= bpp ? prev[i - bpp] : 0;
      let v = cur[i];
      if (f === 1) v += a;
      else if (f === 2) v += up;
      else if (f === 3) v += (a + up) >> 1;
      else if (f === 4) {
        const pa = Math.abs(up - c),
          pb = Math.abs(a - c),
          pc = Math.abs(a + up - 2 * c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
      }
      cur[i] = v & 0xff;
    }
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      px[o] = cur[x * bpp];
      px[o + 1] = cur[x * bpp + 1];
      px[o + 2] = cur[x * bpp + 2];
      px[o + 3] = bpp === 4 ? cur[x * bpp + 3] : 255;
    }
    cur.copy(prev);
  }
  return { width, height, px };
}

/** Pixels that look like VS Code's error red (the severity icon of an error row). */
export function errorRedPixels(img) {
  let n = 0;
  for (let i = 0; i < img.px.length; i += 4) {
    const [r, g, bl] = [img.px[i], img.px[i + 1], img.px[i + 2]];
    if (r > 180 && g < 90 && bl < 90) n++;
  }
  return n;
}

/** A 1 GiB bf16 checkpoint (8 tensors), big enough that preparing it takes seconds. */
export function writeBigCheckpoint(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const rows = 4096;
  const cols = 16384;
  const header = {};
  let off = 0;
  for (let i = 0; i < 8; i++) {
    const len = rows * cols * 2;
    header[`model.layers.${i}.mlp.down_proj.weight`] = { dtype: 'BF16', shape: [rows, cols], data_offsets: [off, off + len] };
    off += len;
  }
  let h = Buffer.from(JSON.stringify(header));
  h = Buffer.concat([h, Buffer.alloc((8 - (h.length % 8)) % 8, 0x20)]);
  const fd = fs.openSync(path.join(dir, 'model.safetensors'), 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  fs.writeSync(fd, len);
  fs.writeSync(fd, h);
  const chunk = Buffer.alloc(64 << 20);
  for (let i = 1; i < chunk.length; i += 2) chunk[i] = 0x3f; // bf16 0x3f00 = 0.5
  for (let w = 0; w < off; w += chunk.length) fs.writeSync(fd, chunk);
  fs.closeSync(fd);
}

export async function runUiCheck(dir, { extensionRoot = process.env.WEIGHT_SPEC_E2E_EXT_ROOT ?? REPO_ROOT } = {}) {
  fs.mkdirSync(dir, { recursive: true });
  let passed = 0;
  let failed = 0;
  const check = async (title, fn) => {
    const t0 = Date.now();
    try {
      const note = await fn();
      passed++;
      console.log(`  ✓ ${title} (${Date.now() - t0} ms)${note ? ` — ${note}` : ''}`);
      return true;
    } catch (e) {
      failed++;
      console.log(`  ✗ ${title}\n      ${e instanceof Error ? e.message : String(e)}`);
      return false;
    }
  };
  console.log('packaged extension in code-server (Playwright)');
  const vsix = path.join(dir, 'weight-spec.vsix');
  const packaged = await check('npm run package makes a .vsix under 15 MB with only the allowed files', async () => {
    execFileSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'vsce'), [...VSCE_PACKAGE_ARGS, '--out', vsix], {
      cwd: extensionRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const r = await checkVsix(vsix);
    return `${(r.bytes / 1024).toFixed(0)} KiB, ${r.files.length} files`;
  });
  if (!packaged) return { passed, failed: failed + 1 };

  const profile = makeProfile(path.join(dir, 'profile'));
  await check('code-server --install-extension installs the .vsix', async () => {
    codeServerCli(profile, ['--install-extension', vsix]);
    const installed = fs.readdirSync(profile.extensionsDir).filter((n) => n.startsWith('weight-spec.weight-spec-'));
    if (installed.length !== 1) throw new Error(`extensions dir holds ${JSON.stringify(fs.readdirSync(profile.extensionsDir))}`);
    for (const f of ['dist/extension.js', 'dist/server.js', 'dist/cli.js', 'syntaxes/weight-spec.tmLanguage.json']) {
      if (!fs.existsSync(path.join(profile.extensionsDir, installed[0], f))) throw new Error(`installed extension lacks ${f}`);
    }
    return installed[0];
  });

  // WEIGHT_SPEC_E2E_UI_GREP (a regex): run only the session's checks whose title matches; the
  // others are listed as skipped and counted neither way (for working on one check).
  const only = process.env.WEIGHT_SPEC_E2E_UI_GREP ? new RegExp(process.env.WEIGHT_SPEC_E2E_UI_GREP, 'i') : undefined;
  const gated = (title, fn) => {
    if (!only || only.test(title)) return check(title, fn);
    console.log(`  - ${title} (skipped: WEIGHT_SPEC_E2E_UI_GREP)`);
    return Promise.resolve(false);
  };
  const ws = makeWorkspace(path.join(dir, 'workspace'));
  prepareEditorWorkspace(ws);
  let server;
  let browser;
  try {
    // The Cancel check below holds its prepare (of ws.dir/big only) once every task is written
    // and before anything is committed, so Cancel lands at a known point however fast the
    // machine is (a 1 GiB prepare once finished in 1.5 s, before the click).
    // HF_HUB_CACHE: a Hugging Face cache laid out in code, for the Export Model pick (ui-hub.mjs).
    server = await startCodeServer(profile, {
      env: { WEIGHT_SPEC_FAILPOINT: `prepare-before-commit:${path.join(ws.dir, 'big')}`, HF_HUB_CACHE: makeHubCache(dir) },
    });
    const launched = await launchBrowser();
    browser = launched.browser;
    const page = launched.page;
    await page.goto(workbenchUrl(server, ws.dir));
    await page.waitForSelector('.monaco-workbench .part.editor', { timeout: 60_000 });
    const shot = path.join(dir, 'problems-panel.png');
    await gated('the Problems panel shows the key-missing diagnostic of the installed extension (screenshot)', async () => {
      // Quick Open the spec, then the Problems panel.
      await page
        .locator('.monaco-workbench')
        .click({ position: { x: 700, y: 400 } })
        .catch(() => {});
      // Quick Open right after start-up can find nothing while the workspace is still being
      // searched (seen under load): longer waits than later checks need.
      await quickOpen(page, path.basename(ws.badSpec), { timeoutMs: 30_000 });
      await page.keyboard.press('Control+Shift+M');
      const panel = page.locator('.markers-panel');
      await panel.waitFor({ state: 'visible', timeout: 15_000 });
      // The row appears once the server has published the diagnostic.
      const row = panel.locator('.monaco-list-row', { hasText: ws.badKey });
      await row.first().waitFor({ state: 'visible', timeout: 90_000 });
      const text = await panel.innerText();
      await page.locator('.part.panel').screenshot({ path: shot });
      const size = pngSize(shot);
      if (!text.includes(ws.badKey)) throw new Error(`panel text lacks ${ws.badKey}: ${text}`);
      if (!text.includes('key-missing')) throw new Error(`panel text shows no key-missing code: ${text}`);
      if (!text.includes(path.basename(ws.badSpec))) throw new Error(`panel text lacks the file name: ${text}`);
      if (size.width < 300 || size.height < 80) throw new Error(`screenshot is ${size.width}x${size.height}`);
      // The picture itself: the error row's red severity icon is drawn (a panel without our
      // error has none of that red).
      const red = errorRedPixels(decodePng(shot));
      if (red < 15) throw new Error(`the screenshot shows no error icon (${red} red pixels): ${shot}`);
      // Each row's text as shown; the screenshot file stays beside the run (kept on failure).
      return `${size.width}x${size.height} PNG, ${red} error-red pixels, panel: ${JSON.stringify(
        text
          .split('\n')
          .filter((l) => l.includes(ws.badKey) || l.includes('weight_spec'))
          .slice(0, 3),
      )}`;
    });
    if (process.env.WEIGHT_SPEC_E2E_SCREENSHOT && fs.existsSync(shot)) fs.copyFileSync(shot, process.env.WEIGHT_SPEC_E2E_SCREENSHOT);
    if (fs.existsSync(shot)) keepScreenshot(shot);
    await viewerChecks(page, ws, gated, { extensionRoot });
    await editorUiChecks(page, ws, { check: gated, dir });
    await hubPickCheck(page, ws, { check: gated, dir });
    await gated('Prepare from the explorer shows a progress percentage, and Cancel stops it leaving nothing complete', async () => {
      const big = path.join(ws.dir, 'big');
      writeBigCheckpoint(big);
      // The explorer, shown by command (Ctrl+Shift+E toggles the focus when it is there already).
      await runCommand(page, 'View: Show Explorer');
      // The editor checks leave the folders view collapsed (the Weight Spec view had its room).
      const folders = page.locator('.pane-header', { hasText: path.basename(ws.dir) }).first();
      if ((await folders.getAttribute('aria-expanded')) === 'false') await folders.click();
      const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'big' }).first();
      await row.waitFor({ state: 'visible', timeout: 30_000 }).catch(async (e) => {
        await page.screenshot({ path: path.join(dir, 'explorer-miss.png') });
        throw e;
      });
      await row.click();
      const file = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'model.safetensors' }).first();
      await file.waitFor({ state: 'visible', timeout: 15_000 });
      // The context menu can open before the explorer has settled (a click then lands on a
      // menu that is being replaced); try again, up to three times, until the dtype picker shows.
      for (let attempt = 1; ; attempt++) {
        await page.keyboard.press('Escape');
        await file.click({ button: 'right' });
        // VS Code's menus ignore a mouse-up that comes right after they open (against
        // click-through), which a scripted click does; so hover the item and press Enter.
        // A menu that did not open (or opened on another row) is one more try, not a failure.
        const menu = await page
          .locator('.monaco-menu .action-label', { hasText: 'Prepare Checkpoint' })
          .first()
          .hover({ timeout: 15_000 })
          .then(
            () => true,
            () => false,
          );
        if (menu) await page.keyboard.press('Enter');
        const shown =
          menu &&
          (await page.waitForSelector('.quick-input-widget input', { state: 'visible', timeout: 20_000 }).then(
            () => true,
            () => false,
          ));
        if (shown) break;
        await page.screenshot({ path: path.join(dir, `picker-miss-${attempt}.png`) });
        if (attempt === 3) throw new Error('the Prepare dtype picker did not open after 3 tries');
      }
      await page.keyboard.type('float32');
      await page.keyboard.press('Enter');
      // The progress notification (in the notification center: headless Chromium has no
      // window focus, and VS Code holds toasts back until it has): title, then "NN% …" once
      // the CLI reports (the extension asks for a plain line every 250 ms).
      await page.locator('[id="status.notifications"]').click();
      const item = page.locator('.notifications-center .notification-list-item', { hasText: 'Preparing big' });
      await item.waitFor({ state: 'visible', timeout: 30_000 }).catch(async (e) => {
        await page.screenshot({ path: path.join(dir, 'progress-failure.png') });
        throw e;
      });
      await item.filter({ hasText: /[1-9]\d*%/ }).waitFor({ timeout: 60_000 });
      const shown = (await item.innerText()).replace(/\s+/g, ' ');
      await page.screenshot({ path: path.join(dir, 'progress.png') });
      await item.locator('.monaco-button', { hasText: 'Cancel' }).click();
      // The runner reports "cancelled" once the killed CLI has exited.
      if (!(await page.locator('.notifications-center').isVisible())) await page.locator('[id="status.notifications"]').click();
      await page.locator('.notification-list-item', { hasText: 'cancelled' }).first().waitFor({ timeout: 30_000 });
      // Nothing that looks complete: no prepared dir with its sentinel or manifest; what is left
      // are temp names (*.tmp-<pid>-…) that a re-run removes.
      const outs = fs.readdirSync(ws.dir).filter((n) => n.startsWith('big-'));
      const left = outs.map((d) => `${d}/{${fs.readdirSync(path.join(ws.dir, d)).join(',')}}`);
      for (const d of outs) {
        const names = fs.readdirSync(path.join(ws.dir, d));
        if (names.includes('.checkpoint_prepared')) throw new Error(`${d} has its sentinel after Cancel`);
        if (!d.includes('.tmp-') && names.some((n) => !n.includes('.tmp-')))
          throw new Error(`${d} looks complete after Cancel: ${names.join(', ')}`);
      }
      fs.rmSync(big, { recursive: true, force: true });
      for (const d of outs) fs.rmSync(path.join(ws.dir, d), { recursive: true, force: true });
      return `notification read "${shown.slice(0, 80)}"; left after Cancel: ${JSON.stringify(left)}`;
    });
  } catch (e) {
    failed++;
    console.log(`  ✗ code-server + Chromium session\n      ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    await browser?.close().catch(() => {});
    await killGroup(server?.child.pid);
  }
  console.log(`packaged extension: ${passed} checks passed, ${failed} failed`);
  return { passed, failed };
}
