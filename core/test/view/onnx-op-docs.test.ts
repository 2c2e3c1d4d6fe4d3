// The graph panel's operator documentation lines (core/src/view/onnx-op-docs.ts): the committed
// data file is exactly what scripts/gen-onnx-op-docs.py makes from ONNX's own operator schemas
// (python3-onnx; skipped with a notice without it, a failure under CI=true), one line per op, and
// the lookup finds ONNX's ops by domain, not custom ones, with their onnx.ai pages.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OP_DOCS_ONNX_VERSION, opDoc } from '../../src/view/onnx-op-docs';
import { describeOnnxChecker, PYTHON } from '../../../test/support/onnx-checker';

const repo = path.resolve(__dirname, '..', '..', '..');
const file = path.join(repo, 'core/src/view/data/onnx-op-docs.json');

describeOnnxChecker('the ONNX op docs data file', () => {
  it("is the generator's output from the installed python3-onnx", () => {
    const r = spawnSync(PYTHON, [path.join(repo, 'scripts/gen-onnx-op-docs.py'), '-'], { encoding: 'utf8', maxBuffer: 16 << 20 });
    expect(r.status, r.stderr).toBe(0);
    const committed = fs.readFileSync(file, 'utf8');
    // Equal bytes; on a difference, say how to fix it rather than print two 37 kB strings.
    expect(
      r.stdout === committed,
      `core/src/view/data/onnx-op-docs.json is stale: run /usr/bin/python3 scripts/gen-onnx-op-docs.py (committed from onnx ${OP_DOCS_ONNX_VERSION})`,
    ).toBe(true);
  });

  it("holds the newest schema's first doc line of an op, as ONNX itself states it", () => {
    // ONNX asked directly (not through the generator): MatMul's and Softmax's newest versions and docs.
    const py = String.raw`
import json
from onnx import defs
out = {}
for n in ['MatMul', 'Softmax', 'Gather']:
    s = defs.get_schema(n)
    out[n] = {'since': s.since_version, 'doc': s.doc}
print(json.dumps(out))
`;
    const onnx = JSON.parse(spawnSync(PYTHON, ['-c', py], { encoding: 'utf8' }).stdout) as Record<string, { since: number; doc: string }>;
    for (const [op, s] of Object.entries(onnx)) {
      const d = opDoc(op)!;
      expect(d.since).toBe(s.since);
      // The line is the doc's first paragraph (markdown stripped), so its words open ONNX's doc.
      const words = d.doc.split(' ').slice(0, 6).join(' ');
      expect(s.doc.replace(/[`*]/g, '').replace(/\s+/g, ' ')).toContain(words);
      expect(d.doc).not.toMatch(/\n|`|\*\*/);
    }
  });
});

describe('op doc lookup', () => {
  it('finds ONNX ops in the default domain, by either spelling, with their onnx.ai pages', () => {
    const m = opDoc('MatMul')!;
    expect(m).toMatchObject({ domain: 'ai.onnx', url: 'https://onnx.ai/onnx/operators/onnx__MatMul.html' });
    expect(m.doc).toMatch(/^Matrix product that behaves like numpy\.matmul/);
    expect(opDoc('MatMul', 'ai.onnx')).toEqual(m);
    expect(opDoc('LinearClassifier', 'ai.onnx.ml')?.url).toBe('https://onnx.ai/onnx/operators/onnx_aionnxml_LinearClassifier.html');
  });

  it('has nothing for a custom op, an op of another domain, or an inherited property name', () => {
    expect(opDoc('CustomRMSNorm', 'com.qti.aisw.onnx')).toBeUndefined();
    expect(opDoc('MatMul', 'com.microsoft')).toBeUndefined();
    expect(opDoc('constructor')).toBeUndefined();
    expect(opDoc('__proto__')).toBeUndefined();
  });

  it('keeps the file to one line per op', () => {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const ops = Object.keys((JSON.parse(lines.join('\n')) as { ops: object }).ops);
    expect(ops.length).toBeGreaterThan(150);
    expect(lines.filter((l) => /^ {4}"/.test(l)).length).toBe(ops.length);
  });
});
