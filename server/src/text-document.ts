/**
 * The open documents' text with its line table, as vscode-languageserver-textdocument's
 * FullTextDocument keeps them (ported from its lib/umd/main.js, 1.0.16, MIT, © Microsoft; the
 * same semantics: \n, \r and \r\n end lines, positions past a line's end clamp before it) but
 * with the line starts in a typed array: on a 20 000-input spec (175 000 lines) the library's
 * array of numbers was 1.4 MiB of the language server's heap, an eighth of it. The test
 * (server/test/text-document.test.ts) runs random edits through both and compares.
 */
import type { Position, Range, TextDocument } from 'vscode-languageserver-textdocument';
import type { TextDocumentContentChangeEvent } from 'vscode-languageserver/node';

const CR = 13;
const LF = 10;
const isEol = (c: number) => c === CR || c === LF;

/** Line starts of `text` (offset by `base`), the first one `base` itself when `atLineStart`. */
function lineStarts(text: string, atLineStart: boolean, base = 0): number[] {
  const out = atLineStart ? [base] : [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!isEol(c)) continue;
    if (c === CR && i + 1 < text.length && text.charCodeAt(i + 1) === LF) i++;
    out.push(base + i + 1);
  }
  return out;
}

/** A {@link TextDocument} whose line table is a Uint32Array (see the file's comment). */
class CompactTextDocument implements TextDocument {
  private lines: Uint32Array | undefined;
  private lineCountCache = 0;

  constructor(
    readonly uri: string,
    readonly languageId: string,
    public version: number,
    private content: string,
  ) {}

  getText(range?: Range): string {
    if (!range) return this.content;
    return this.content.substring(this.offsetAt(range.start), this.offsetAt(range.end));
  }

  get lineCount(): number {
    this.table();
    return this.lineCountCache;
  }

  positionAt(offset: number): Position {
    offset = Math.max(Math.min(offset, this.content.length), 0);
    const lines = this.table();
    let lo = 0;
    let hi = this.lineCountCache;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (lines[mid]! > offset) hi = mid;
      else lo = mid + 1;
    }
    const line = lo - 1;
    return { line, character: this.beforeEol(offset, lines[line]!) - lines[line]! };
  }

  offsetAt(position: Position): number {
    const lines = this.table();
    const n = this.lineCountCache;
    if (position.line >= n) return this.content.length;
    if (position.line < 0) return 0;
    const start = lines[position.line]!;
    if (position.character <= 0) return start;
    const next = position.line + 1 < n ? lines[position.line + 1]! : this.content.length;
    return this.beforeEol(Math.min(start + position.character, next), start);
  }

  getLineRange(line: number): Range {
    const lines = this.table();
    const n = this.lineCountCache;
    if (line >= n) {
      const last = n - 1;
      return { start: { line: last, character: 0 }, end: { line: last, character: this.content.length - lines[last]! } };
    }
    if (line < 0) return { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } };
    const start = lines[line]!;
    const next = line + 1 < n ? lines[line + 1]! : this.content.length;
    return { start: { line, character: 0 }, end: { line, character: this.beforeEol(next, start) - start } };
  }

  getEOLCharacters(line: number): string {
    const lines = this.table();
    const n = this.lineCountCache;
    if (line >= n || line < 0) return '';
    const next = line + 1 < n ? lines[line + 1]! : this.content.length;
    return this.content.substring(this.beforeEol(next, lines[line]!), next);
  }

  /** Applies LSP content changes (incremental or full) in order. */
  update(changes: readonly TextDocumentContentChangeEvent[], version: number): void {
    for (const change of changes) {
      if (!('range' in change) || change.range === undefined) {
        this.content = change.text;
        this.lines = undefined;
        continue;
      }
      const range = wellFormed(change.range);
      const start = this.offsetAt(range.start);
      const end = this.offsetAt(range.end);
      this.content = this.content.substring(0, start) + change.text + this.content.substring(end);
      const insertedEnd = start + change.text.length;
      const c = this.content;
      // a CR LF pair across an edit boundary: the table is rebuilt (as the library does)
      if (
        (c.charCodeAt(start - 1) === CR && c.charCodeAt(start) === LF) ||
        (c.charCodeAt(insertedEnd - 1) === CR && c.charCodeAt(insertedEnd) === LF)
      ) {
        this.lines = undefined;
        continue;
      }
      if (!this.lines) continue; // built on next use from the new content
      // lines past the end count as the last line (where offsetAt put the edit)
      const last = this.lineCountCache - 1;
      const line = (l: number) => Math.min(Math.max(l, 0), last);
      this.splice(line(range.start.line), line(range.end.line), lineStarts(change.text, false, start), change.text.length - (end - start));
    }
    this.version = version;
  }

  /** Replaces the starts of lines `startLine + 1 ..= endLine` by `added`, moving later ones by `diff`. */
  private splice(startLine: number, endLine: number, added: number[], diff: number): void {
    const old = this.lines!;
    const n = this.lineCountCache;
    const removed = endLine - startLine;
    const count = n - removed + added.length;
    const tailFrom = startLine + 1 + removed;
    const table = count <= old.length ? old : new Uint32Array(Math.max(count, old.length * 2));
    // the tail moves (in place, copyWithin handles the overlap), then the added starts go in
    if (table === old) table.copyWithin(startLine + 1 + added.length, tailFrom, n);
    else {
      table.set(old.subarray(0, startLine + 1));
      table.set(old.subarray(tailFrom, n), startLine + 1 + added.length);
    }
    for (let i = 0; i < added.length; i++) table[startLine + 1 + i] = added[i]!;
    if (diff !== 0) for (let i = startLine + 1 + added.length; i < count; i++) table[i] = table[i]! + diff;
    this.lines = table;
    this.lineCountCache = count;
  }

  private table(): Uint32Array {
    if (!this.lines) {
      const c = this.content;
      let lines = new Uint32Array(Math.max(16, c.length >> 5));
      let n = 1;
      for (let i = 0; i < c.length; i++) {
        const ch = c.charCodeAt(i);
        if (ch !== LF && (ch !== CR || c.charCodeAt(i + 1) === LF)) continue;
        if (n === lines.length) {
          const grown = new Uint32Array(n * 2);
          grown.set(lines);
          lines = grown;
        }
        lines[n++] = i + 1;
      }
      this.lines = lines;
      this.lineCountCache = n;
    }
    return this.lines;
  }

  private beforeEol(offset: number, lineStart: number): number {
    while (offset > lineStart && isEol(this.content.charCodeAt(offset - 1))) offset--;
    return offset;
  }
}

function wellFormed(range: Range): Range {
  const { start, end } = range;
  return start.line > end.line || (start.line === end.line && start.character > end.character) ? { start: end, end: start } : range;
}

/** A new document (TextDocument.create's counterpart). */
export function createTextDocument(uri: string, languageId: string, version: number, content: string): TextDocument {
  return new CompactTextDocument(uri, languageId, version, content);
}

/** Applies `changes` to a document made by {@link createTextDocument} (TextDocument.update's counterpart); returns it. */
export function updateTextDocument(doc: TextDocument, changes: readonly TextDocumentContentChangeEvent[], version: number): TextDocument {
  if (!(doc instanceof CompactTextDocument)) throw new TypeError('updateTextDocument: not a document made by createTextDocument');
  doc.update(changes, version);
  return doc;
}
