/**
 * Issue #14, point 3, at CI size: the real server (dist/server.js) under incremental edits of
 * different keys, each waiting for its diagnostics, keeps its RSS after the run within 1.5×
 * its RSS after 10 edits. Before the fix every patched key was a V8 sliced string of its
 * document version, so each edit kept one whole version of the spec alive (found with a heap
 * snapshot; see core/src/spec/patch.ts). The full-size run (55,000 inputs, 1,000 edits) is
 * bench/lsp-edit-soak.bench.mjs in `npm run bench`.
 */
import { describe, expect, it } from 'vitest';
import { runEditSoak } from '../../bench/lsp-edit-soak.bench.mjs';

describe('language server memory under incremental edits', () => {
  it('RSS after 300 key edits of a 6,000-input spec stays within 1.5× RSS after 10', async () => {
    const r = await runEditSoak({ inputs: 6_000, edits: 300 });
    const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
    console.log(
      `edit soak: ${mib(r.specBytes)} spec; RSS ${mib(r.rssAt10)} → ${mib(r.rssEnd)}; heap ${mib(r.heapAt10)} → ${mib(r.heapEnd)}; ${(r.ms / 1000).toFixed(1)} s`,
    );
    expect(r.rssEnd / r.rssAt10).toBeLessThanOrEqual(1.5);
  });
});
