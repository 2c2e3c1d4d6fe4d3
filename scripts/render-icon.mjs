// Renders media/icon.svg to media/icon.png (128×128, the marketplace's icon size) with the
// Chromium the e2e suite uses, through playwright-core. Run after editing the SVG:
// `node scripts/render-icon.mjs`; the PNG is committed (vsce needs a PNG, not an SVG).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const svg = fs.readFileSync(path.join(root, 'media', 'icon.svg'), 'utf8');
const browser = await chromium.launch({ executablePath: process.env.WEIGHT_SPEC_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 128, height: 128 }, deviceScaleFactor: 1 });
  await page.setContent(
    `<html><body style="margin:0;background:transparent">${svg.replace('width="256" height="256"', 'width="128" height="128"')}</body></html>`,
  );
  await page.locator('svg').screenshot({ path: path.join(root, 'media', 'icon.png'), omitBackground: true });
} finally {
  await browser.close();
}
console.log('wrote media/icon.png');
