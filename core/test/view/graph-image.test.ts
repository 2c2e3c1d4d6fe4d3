// Saving the graph explorer's SVG and PNG (core/src/view/graph-image.ts) on a real disk: the
// picture is written whole through temp + rename, an existing file is replaced only when the
// save dialog confirmed it, a directory or FIFO is refused, and bytes that are not what the
// format says are never written.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { graphImageBytes, saveGraphImage } from '../../src/view/graph-image';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-graph-image-');
// pngjs has no types; the shape this test uses.
type Png = { width: number; height: number; data: Buffer };
const { PNG } = createRequire(__filename)('pngjs') as {
  PNG: { new (o: { width: number; height: number }): Png; sync: { write(p: Png): Buffer; read(b: Buffer): Png } };
};
const SVG = '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>\n';

/** A real 2×1 PNG (pngjs encodes it), as the canvas's toDataURL gives it. */
function pngUrl(): string {
  const png = new PNG({ width: 2, height: 1 });
  png.data.fill(200);
  return `data:image/png;base64,${PNG.sync.write(png).toString('base64')}`;
}

describe('graph image save', () => {
  it('writes an SVG and a PNG whole, leaving no temp file', async () => {
    const dir = tmp();
    const svg = path.join(dir, 'g.svg');
    expect(await saveGraphImage(svg, 'svg', SVG)).toBe(Buffer.byteLength(SVG));
    expect(fs.readFileSync(svg, 'utf8')).toBe(SVG);
    const png = path.join(dir, 'g.png');
    await saveGraphImage(png, 'png', pngUrl());
    const back = PNG.sync.read(fs.readFileSync(png));
    expect([back.width, back.height, back.data[0]]).toEqual([2, 1, 200]);
    expect(fs.readdirSync(dir).sort()).toEqual(['g.png', 'g.svg']);
  });

  it('replaces an existing file only when the dialog confirmed it', async () => {
    const dir = tmp();
    const out = path.join(dir, 'g.svg');
    fs.writeFileSync(out, 'old');
    await expect(saveGraphImage(out, 'svg', SVG)).rejects.toThrow(/exists; choose another name \(nothing was written\)/);
    expect(fs.readFileSync(out, 'utf8')).toBe('old');
    await saveGraphImage(out, 'svg', SVG, { replace: true });
    expect(fs.readFileSync(out, 'utf8')).toBe(SVG);
  });

  it('refuses a directory or a FIFO even when confirmed', async () => {
    const dir = tmp();
    const sub = path.join(dir, 'sub.svg');
    fs.mkdirSync(sub);
    await expect(saveGraphImage(sub, 'svg', SVG, { replace: true })).rejects.toThrow(/is a directory, not a file to replace/);
    const fifo = path.join(dir, 'f.svg');
    execFileSync('mkfifo', [fifo]);
    await expect(saveGraphImage(fifo, 'svg', SVG, { replace: true })).rejects.toThrow(/is a FIFO/);
    expect(fs.readdirSync(dir).sort()).toEqual(['f.svg', 'sub.svg']);
  });

  it('writes nothing that is not what its format says', async () => {
    const dir = tmp();
    expect(() => graphImageBytes('svg', '<html></html>')).toThrow('the SVG export is not an SVG document');
    expect(() => graphImageBytes('png', 'data:image/png;base64,' + Buffer.from('GIF89a....').toString('base64'))).toThrow(
      /not a PNG image/,
    );
    expect(() => graphImageBytes('png', 'data:image/jpeg;base64,AAAA')).toThrow(/not a PNG image/);
    await expect(saveGraphImage(path.join(dir, 'x.png'), 'png', 'data:,')).rejects.toThrow(/not a PNG image/);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
