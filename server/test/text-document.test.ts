/**
 * server/src/text-document.ts against the library it replaces (vscode-languageserver-textdocument):
 * random incremental and full edits — line breaks \n, \r and \r\n inserted and
 * deleted, edits across CR LF pairs, ranges given end first, positions past line ends and
 * past the document — applied to both, then text, line count, positionAt, offsetAt,
 * getLineRange and getEOLCharacters compared at many points.
 */
import { TextDocument } from 'vscode-languageserver-textdocument';
import { describe, expect, it } from 'vitest';
import { rng } from '../../core/src/foundation/rng';
import { createTextDocument, updateTextDocument } from '../src/text-document';

const PIECES = ['a', 'bc', '\n', '\r\n', '\r', '"key": "x"', '  ', '\n\n', 'é', '𝔁'];

describe('compact text document', () => {
  it('equals vscode-languageserver-textdocument (rebuilt from scratch after each change) over 3,000 random edits of 20 documents', () => {
    // The reference applies each change to a library document made afresh from the text, so
    // its line table is never an incrementally updated one (the library's own incremental
    // table drifts when a range names lines past the end: "é\na\r\n𝔁" counted 4 lines).
    const r = rng(11);
    const int = (n: number) => Math.floor(r() * n);
    const text = (n: number) => Array.from({ length: n }, () => PIECES[int(PIECES.length)]).join('');
    const fresh = (t: string, v = 1) => TextDocument.create('file:///x.json', 'json', v, t);
    let edits = 0;
    for (let d = 0; d < 20; d++) {
      let refText = text(int(200));
      let ours = createTextDocument('file:///x.json', 'json', 1, refText);
      // our document's table is built on first use: touch it in half the documents up front
      if (d % 2 === 0) void ours.lineCount;
      for (let k = 0; k < 150; k++, edits++) {
        const before = fresh(refText);
        const pos = () => ({ line: int(before.lineCount + 2) - 1, character: int(12) - 1 });
        const changes =
          k % 37 === 36
            ? [{ text: text(int(50)) }]
            : Array.from({ length: 1 + int(2) }, () => ({
                range: { start: pos(), end: r() < 0.5 ? pos() : before.positionAt(int(refText.length + 1)) },
                text: r() < 0.3 ? '' : text(int(4)),
              }));
        for (const c of changes) {
          const step = fresh(refText);
          TextDocument.update(step, [c], 2);
          refText = step.getText();
        }
        ours = updateTextDocument(ours, changes, k + 2);
        const ref = fresh(refText, k + 2);
        expect(ours.getText()).toBe(refText);
        expect(ours.version).toBe(ref.version);
        expect(ours.lineCount).toBe(ref.lineCount);
        for (let q = 0; q < 8; q++) {
          const o = int(refText.length + 3) - 1;
          expect(ours.positionAt(o), `positionAt(${o})`).toEqual(ref.positionAt(o));
          const p = pos();
          expect(ours.offsetAt(p), `offsetAt(${JSON.stringify(p)})`).toBe(ref.offsetAt(p));
          const line = int(ref.lineCount + 2) - 1;
          expect(ours.getLineRange(line)).toEqual(ref.getLineRange(line));
          expect(ours.getEOLCharacters(line)).toBe(ref.getEOLCharacters(line));
        }
        const a = pos();
        const b = pos();
        expect(ours.getText({ start: a, end: b })).toBe(ref.getText({ start: a, end: b }));
      }
    }
    expect(edits).toBe(3000);
  });

  it('refuses a document it did not make', () => {
    expect(() => updateTextDocument(TextDocument.create('file:///y', 'json', 1, ''), [], 2)).toThrow(
      /not a document made by createTextDocument/,
    );
  });
});
