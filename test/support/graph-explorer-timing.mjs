/* global document, window, requestAnimationFrame -- the evaluate callbacks run in the webview */
// The graph explorer's timings, shared by bench/graph-explorer.bench.mjs (a headless Chromium
// page) and the e2e check (the webview frame inside VS Code): first paint after the Graph tab
// click, and the draw cost of each frame while the pointer zooms and pans. `target` is a
// Playwright Page or Frame showing the ONNX viewer; `mouse` is the page's mouse.

/** Graph tab click → first frame drawn (ms, in the webview's clock; includes the model's round trip). */
export async function firstPaint(target) {
  return target.evaluate(
    () =>
      new Promise((resolve) => {
        const t0 = performance.now();
        [...document.querySelectorAll('button.tab')].find((b) => b.textContent === 'Graph').click();
        const poll = () => {
          const m = performance.getEntriesByName('gx-first-paint')[0];
          if (m) resolve(m.startTime - t0);
          else requestAnimationFrame(poll);
        };
        poll();
      }),
  );
}

/** 30 wheel steps (in, then out) and a 60-step drag over the canvas: draw times and rAF intervals (ms). */
export async function frameTimes(target, mouse) {
  await target.evaluate(() => {
    performance.clearMeasures('gx-draw');
    window.__raf = [];
    const tick = (t) => {
      window.__raf.push(t);
      if (window.__raf.length < 100000) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const box = await target.locator('canvas.gx-canvas').boundingBox();
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  await mouse.move(cx, cy);
  for (let i = 0; i < 30; i++) await mouse.wheel(0, i < 15 ? -60 : 60);
  await mouse.down();
  for (let i = 0; i < 60; i++) await mouse.move(cx + 200 * Math.sin(i / 6), cy + 3 * i, { steps: 1 });
  await mouse.up();
  return target.evaluate(() => {
    const draws = performance.getEntriesByName('gx-draw').map((e) => e.duration);
    const r = window.__raf;
    window.__raf = [1e9]; // ends the loop
    return { draws, raf: r.slice(1).map((t, i) => t - r[i]) };
  });
}

/** Median, min, max and p95 of `xs`. */
export function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), min: s[0], max: s[s.length - 1], p95: q(0.95), n: s.length };
}
