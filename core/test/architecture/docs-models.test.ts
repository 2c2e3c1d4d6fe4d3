/**
 * The README's model table and docs/MODULES.md's family list are the registries' own text
 * (issue #49: MODULES.md had lost `stablelm` when it was kept by hand). This test fails when
 * either file differs from what test/support/model-table.ts generates; `npm run docs:models`
 * (WEIGHT_SPEC_WRITE_DOCS=1) writes both.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { MARKERS, modulesFamilyList, readmeModelTable, withSection } from '../../../test/support/model-table';
import { FAMILIES } from '../../src/export/families/registry';
import { VLM_MODEL_TYPES } from '../../src/export/vlm/config';

const write = process.env.WEIGHT_SPEC_WRITE_DOCS === '1';
const files = [
  { file: 'README.md', markers: MARKERS.readme, body: readmeModelTable },
  { file: path.join('docs', 'MODULES.md'), markers: MARKERS.modules, body: modulesFamilyList },
];

for (const { file, markers, body } of files) {
  it(`${file}: the generated model list equals the registry's`, () => {
    const at = path.join(REPO_ROOT, file);
    const text = fs.readFileSync(at, 'utf8');
    const want = withSection(text, markers, body());
    if (write && want !== text) fs.writeFileSync(at, want);
    else expect(text, `${file} is out of date: run npm run docs:models`).toBe(want);
  });
}

it('every registry row and VLM type is in the table (the generator leaves none out)', () => {
  const table = readmeModelTable();
  for (const f of FAMILIES) expect(table).toContain(`| \`${f.modelType}\``);
  for (const t of VLM_MODEL_TYPES) expect(table).toContain(`| \`${t}\` |`);
});
