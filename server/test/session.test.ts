// The incremental path behind the server's fast re-checks: a session that patches its parse
// on name/key edits reports exactly what a full `checkSpec` reports for the same text, and a
// newer edit's AbortSignal cancels an older check.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkSpec, HeaderCache, SpecCheckSession } from '../../core/src/check';
import { diffTexts } from '../../core/src/spec';
import { makeWorkspace } from './workspace';

describe('SpecCheckSession (incremental re-check)', () => {
  it('diffTexts finds the single edit', () => {
    expect(diffTexts('abcdef', 'abXdef')).toEqual({ start: 2, oldEnd: 3, newEnd: 3 });
    expect(diffTexts('aaaa', 'aaaaa')).toEqual({ start: 4, oldEnd: 4, newEnd: 5 });
    const big = 'x'.repeat(300_000);
    expect(diffTexts(big + 'a' + big, big + 'bc' + big)).toEqual({ start: 300_000, oldEnd: 300_001, newEnd: 300_002 });
  });

  it('patched checks equal full checks over random edit sequences', async () => {
    const ws = makeWorkspace();
    const base = ws.text(ws.spec());
    const cache = new HeaderCache();
    const edits = fc.array(
      fc.record({
        kind: fc.constantFrom('key', 'name', 'ws', 'file'),
        input: fc.integer({ min: 0, max: 4 }),
        at: fc.nat(),
        text: fc.constantFrom('x', '', 'q_', '.weight', '"', '\\', ' '),
        del: fc.integer({ min: 0, max: 3 }),
      }),
      { minLength: 1, maxLength: 12 },
    );
    let patched = 0;
    await fc.assert(
      fc.asyncProperty(edits, async (seq) => {
        const session = new SpecCheckSession(ws.specFile, { cache });
        let text = base;
        await session.check(text);
        for (const e of seq) {
          // Find the e.input-th key/name string (or a spot outside strings) in the current text.
          const needle = e.kind === 'key' ? '"key": "' : e.kind === 'name' ? '"name": "' : e.kind === 'file' ? '"file": ' : '"location": ';
          let p = -1;
          for (let k = 0; k <= e.input; k++) p = text.indexOf(needle, p + 1);
          if (p < 0) continue;
          const start = p + needle.length + (e.kind === 'key' || e.kind === 'name' ? e.at % 12 : 0);
          text = text.slice(0, start) + e.text + text.slice(Math.min(text.length, start + e.del));
          const run = await session.check(text);
          if (session.lastParse === 'patched') patched++;
          const full = await checkSpec(ws.specFile, text, { cache });
          expect(run.problems).toEqual(full);
        }
      }),
      { numRuns: 60, seed: 7 },
    );
    expect(patched).toBeGreaterThan(20); // the incremental path was really exercised
  });

  it('an aborted check rejects and leaves the session usable', async () => {
    const ws = makeWorkspace();
    const session = new SpecCheckSession(ws.specFile, { cache: new HeaderCache() });
    const abort = new AbortController();
    const p = session.check(ws.text(ws.spec()), abort.signal);
    abort.abort();
    await expect(p).rejects.toThrow();
    expect((await session.check(ws.text(ws.spec()))).problems).toEqual([]);
  });
});
