/* global document -- the waitForFunction callbacks run in the webview frame */
// Issue 50.4 in the real VS Code (called by viewers-ui.mjs inside the code-server + Chromium
// session, on viewers-ui.mjs's llama export ui-export): the graph panel shows ONNX's own
// documentation line of the selected op with its onnx.ai link; the canvas stays beside the side
// panel when the panel's edge is dragged; and the Command Palette's "Export Graph as SVG…" saves
// the graph through the save dialog as an SVG document that an XML parser reads, holding the
// selected op; the layout turns left to right, the layer outline moves the view, shape labels are
// drawn; searching "experts" on the 30B MoE graph finds its packed experts. Screenshots go to
// test/e2e/screenshots/.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { closeAll, jump, openGraph } from './viewers-explorer-ui.mjs';
import { SCREENSHOT_DIR, shoot, webviewFrame } from './viewers-ui.mjs';

/** Python's XML parser on `file`: the op boxes' node names and the edge count (it throws on a malformed document). */
function parseSvg(file) {
  const py = String.raw`
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
assert root.tag == ns + 'svg', root.tag
print(json.dumps({
  'ops': [g.get('data-node') for g in root.iter(ns + 'g') if g.get('class') == 'op'],
  'edges': len(list(root.iter(ns + 'polyline'))),
}))
`;
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', py, file]).toString());
}

/** The canvas's and the side panel's left/right edges (CSS pixels in the webview). */
const edges = (frame) =>
  frame.evaluate(() => {
    const c = document.querySelector('canvas.gx-canvas').getBoundingClientRect();
    const p = document.querySelector('.gx-panel').getBoundingClientRect();
    return { canvasLeft: c.left, canvasRight: c.right, panelLeft: p.left, panelWidth: p.width };
  });

/** Runs the checks through `check(title, fn)`; `ws.dir/ui-export` is the llama export viewers-ui.mjs wrote. */
export async function graphExportChecks(page, ws, check) {
  await check(
    "the graph panel shows the op's ONNX documentation line and onnx.ai link; the canvas stays beside the resized panel (screenshot)",
    async () => {
      const { frame, panel } = await openGraph(page, 'ui-export');
      await jump(frame, 'model.layers.0.self_attn.q_proj.weight', 'Gemm');
      const doc = panel.locator('.gx-doc');
      await doc.waitFor({ timeout: 15_000 });
      const text = await doc.innerText();
      const href = await doc.locator('a').getAttribute('href');
      if (!/^General Matrix multiplication/.test(text)) throw new Error(`the Gemm's doc line reads ${JSON.stringify(text)}`);
      if (href !== 'https://onnx.ai/onnx/operators/onnx__Gemm.html') throw new Error(`the doc link is ${href}`);
      const shot = path.join(SCREENSHOT_DIR, 'onnx-graph-op-doc.png');
      await page.locator('.part.editor').screenshot({ path: shot });
      const shown = shoot(shot, await panel.innerText(), ['General Matrix multiplication', 'ai.onnx v']);
      // The panel's edge dragged 160 px left: the panel widens, the canvas narrows with it.
      const before = await edges(frame);
      if (before.canvasRight > before.panelLeft + 0.5) throw new Error(`the canvas runs under the panel: ${JSON.stringify(before)}`);
      const box = await frame.locator('.gx-split').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x - 160, box.y + box.height / 2, { steps: 8 });
      await page.mouse.up();
      await frame.waitForFunction(
        (w) => {
          const c = document.querySelector('canvas.gx-canvas');
          return document.querySelector('.gx-panel').getBoundingClientRect().width > w + 100 && c.width > 0;
        },
        before.panelWidth,
        { timeout: 15_000 },
      );
      // The ResizeObserver redraws the canvas at the new width (next frame).
      await frame.waitForFunction(
        () => {
          const c = document.querySelector('canvas.gx-canvas').getBoundingClientRect();
          return c.right <= document.querySelector('.gx-panel').getBoundingClientRect().left + 0.5;
        },
        null,
        { timeout: 15_000 },
      );
      const after = await edges(frame);
      const resized = path.join(SCREENSHOT_DIR, 'onnx-graph-panel-resized.png');
      await page.locator('.part.editor').screenshot({ path: resized });
      shoot(resized, await panel.innerText(), ['Gemm']);
      return `${shown}; doc "${text.slice(0, 90)}" → ${href}; panel ${before.panelWidth.toFixed(0)} → ${after.panelWidth.toFixed(0)} px, canvas right ${after.canvasRight.toFixed(0)} ≤ panel left ${after.panelLeft.toFixed(0)}`;
    },
  );

  await check('Export Graph as SVG… saves the graph through the save dialog as an SVG an XML parser reads (screenshot)', async () => {
    const out = path.join(ws.dir, 'ui-export', 'e2e-graph.svg');
    fs.rmSync(out, { force: true });
    try {
      // The explorer again, its Gemm selected (the SVG must hold that box).
      const { frame } = await openGraph(page, 'ui-export');
      await jump(frame, 'model.layers.0.self_attn.q_proj.weight', 'Gemm');
      const gemm = await frame.locator('.gx-panel .gx-name').innerText();
      // The toolbar's SVG… button, as a user clicks it (the palette's Ctrl+P can land in the
      // webview, which holds the keyboard after the search: the palette entry is checked in
      // client/test/manifest.test.ts). Both post the same message to the extension.
      await frame.locator('button', { hasText: /^SVG/ }).first().click();
      // VS Code's save dialog (code-server: the simple dialog, a path in the quick input).
      const input = page.locator('.quick-input-widget input');
      await input.waitFor({ state: 'visible', timeout: 15_000 });
      await page.waitForFunction(() => /-graph\.svg$/.test(document.querySelector('.quick-input-widget input')?.value ?? ''), null, {
        timeout: 15_000,
      });
      const proposed = await input.inputValue();
      const shot = path.join(SCREENSHOT_DIR, 'onnx-graph-svg-dialog.png');
      await page.screenshot({ path: shot });
      await input.fill(out);
      await page.keyboard.press('Enter');
      const deadline = Date.now() + 30_000;
      while (!fs.existsSync(out)) {
        if (Date.now() > deadline) throw new Error(`no ${out} 30 s after the save dialog (it proposed ${proposed})`);
        await page.waitForTimeout(250);
      }
      const svg = parseSvg(out);
      if (!svg.ops.includes(gemm)) throw new Error(`the SVG has no box of ${gemm} (${svg.ops.length} op boxes)`);
      if (svg.edges < 10) throw new Error(`the SVG has ${svg.edges} edges`);
      const left = fs.readdirSync(path.dirname(out)).filter((f) => /^e2e-graph\.svg\.tmp-/.test(f));
      if (left.length) throw new Error(`temp files left beside the SVG: ${left.join(', ')}`);
      return `${shoot(shot, proposed, ['-graph.svg'])}; proposed ${path.basename(proposed)}; ${out} parses: ${svg.ops.length} op boxes (${gemm} among them), ${svg.edges} edges, ${fs.statSync(out).size} bytes`;
    } catch (e) {
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'onnx-graph-svg-failure.png') }).catch(() => {});
      throw e;
    } finally {
      fs.rmSync(out, { force: true });
      await page.keyboard.press('Escape');
      await closeAll(page);
    }
  });
  await horizontalLayoutCheck(page, check);
}

/**
 * The canvas's data attribute `name` once it equals `want.is` or exceeds `want.over` (the
 * explorer sets them each frame). A plain predicate, no eval: the webview's CSP forbids it.
 */
async function canvasData(frame, name, want, what) {
  const read = (n) => document.querySelector('canvas.gx-canvas')?.dataset[n];
  try {
    await frame.waitForFunction(
      ([n, w]) => {
        const v = document.querySelector('canvas.gx-canvas')?.dataset[n];
        return w.is !== undefined ? v === w.is : Number(v) > w.over;
      },
      [name, want],
      { timeout: 15_000 },
    );
  } catch {
    throw new Error(`${what}: the canvas's data-${name} is ${JSON.stringify(await frame.evaluate(read, name))}`);
  }
  return frame.evaluate(read, name);
}

/**
 * Issue 50.4's horizontal layout, layer outline and shape labels on ui-export's graph (prologue,
 * 2 layers, head: 4 blocks): the layout picker turns it left to right (the blocks' rectangles the
 * canvas exposes run along x, centered on y = 0), a click on the outline's slot of a layer
 * centers the view on that layer, and with "shapes on edges" labels are drawn.
 */
async function horizontalLayoutCheck(page, check) {
  await check(
    'the graph explorer lays out left to right, its layer outline moves the view to a layer, shape labels are drawn (screenshot)',
    async () => {
      try {
        const { frame, canvas } = await openGraph(page, 'ui-export');
        await frame.locator('#gx-direction').selectOption('LR');
        await canvasData(frame, 'direction', { is: 'LR' }, 'left → right was picked');
        const blocks = (await canvas.getAttribute('data-blocks')).split(' ').map((b) => b.split(',').map(Number));
        if (blocks.length !== 4) throw new Error(`the canvas exposes ${blocks.length} blocks: ${JSON.stringify(blocks)}`);
        for (let i = 1; i < blocks.length; i++) {
          const [[x0, , w0], [x1, y1, , h1]] = [blocks[i - 1], blocks[i]];
          if (!(x1 > x0 + w0) || Math.abs(y1 + h1 / 2) > 1) throw new Error(`the blocks are not left to right: ${JSON.stringify(blocks)}`);
        }
        // The outline: a slot per block along the top; layer 1 (collapsed), then layer 0.
        const outline = frame.locator('.gx-minimap');
        await outline.waitFor({ timeout: 15_000 });
        const slot = Number(await outline.getAttribute('data-slot'));
        if (!(slot > 10)) throw new Error(`the layer outline's slots are ${slot} px`);
        await outline.click({ position: { x: 2.5 * slot, y: 22 } });
        await canvasData(frame, 'center', { is: '2' }, 'a click on layer 1 in the outline');
        // Shapes on (the gaps between ranks widen for them), then back to layer 0 through the outline.
        if (!(await frame.locator('#gx-shapes').isChecked())) await frame.locator('label[for="gx-shapes"]').click();
        await outline.click({ position: { x: 1.5 * slot, y: 22 } });
        await canvasData(frame, 'center', { is: '1' }, 'a click on layer 0 in the outline');
        const labels = Number(await canvasData(frame, 'edgeLabels', { over: 3 }, 'shape labels on layer 0'));
        const sample = await canvas.getAttribute('data-edge-sample');
        const view = await outline.getAttribute('data-view');
        const shot = path.join(SCREENSHOT_DIR, 'onnx-graph-left-to-right.png');
        await page.locator('.part.editor').screenshot({ path: shot });
        const shown = shoot(shot, sample, ['[']);
        return `${shown}; blocks ${blocks.map((b) => b.join(',')).join(' | ')}; outline slot ${slot.toFixed(1)} px, view ${view}; ${labels} labels (${sample.slice(0, 80)})`;
      } catch (e) {
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'onnx-graph-left-to-right-failure.png') }).catch(() => {});
        throw e;
      } finally {
        await closeAll(page);
      }
    },
  );
}

/** On the 30B MoE graph viewers-ui.mjs's timing check left open (qwen3-30b.onnx): "experts" finds the packed expert tensors. */
export async function expertsSearchCheck(page, check) {
  await check('searching "experts" on the 30B MoE graph finds its packed experts (moe_weights) in every layer (screenshot)', async () => {
    const frame = await webviewFrame(page, 'qwen3-30b.onnx', 'input.gx-search');
    const search = frame.locator('input.gx-search');
    await search.fill('experts');
    await search.press('Enter');
    await frame.locator('.gx-panel h3', { hasText: 'MatMul' }).waitFor({ timeout: 15_000 });
    const count = await frame.locator('.gx-hit-count').innerText();
    const first = await frame.locator('.gx-hit').first().innerText();
    const panel = await frame.locator('.gx-panel').innerText();
    const shot = path.join(SCREENSHOT_DIR, 'onnx-graph-experts.png');
    await page.locator('.part.editor').screenshot({ path: shot });
    // 48 layers × gate, up, down: more than the 100 the list holds.
    if (!/^100\+ matches/.test(count)) throw new Error(`"experts" gives ${count}`);
    if (!/experts\.(gate|up|down) \(packed experts\)/.test(first)) throw new Error(`the first hit reads ${first}`);
    const shown = shoot(shot, panel, ['moe_weights', 'MatMul']);
    await search.fill('');
    return `${shown}; ${count}; first hit ${first.replace(/\s+/g, ' ')}`;
  });
}
