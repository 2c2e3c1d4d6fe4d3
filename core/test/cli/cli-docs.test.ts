/**
 * docs/CLI.md's generated regions (synopsis, command reference) equal what the CLI's own flag
 * tables render (issue 36 item 12): a flag added, renamed or re-described without
 * `npm run docs:cli` fails here. The hand-written sections stay (exit and problem codes).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/main';
import { renderCliDoc } from '../../src/cli/docs';
import { PROBLEM_SEVERITY } from '../../src/problem-codes';
import { REPO_ROOT } from '../../../test/support/fixtures';

const file = path.join(REPO_ROOT, 'docs', 'CLI.md');
const doc = readFileSync(file, 'utf8');

it('docs/CLI.md is what `npm run docs:cli` generates from the command tables', () => {
  expect(doc, 'docs/CLI.md drifted from the CLI: run `npm run docs:cli`').toBe(renderCliDoc(doc));
});

it('documents every flag of every command, is no longer a draft, and keeps its hand-written sections', () => {
  for (const c of COMMANDS) {
    expect(doc).toContain(`### \`${c.name}\``);
    for (const flag of Object.keys(c.flags)) expect(doc, `${c.name} --${flag}`).toContain(`| \`--${flag}`);
  }
  expect(doc).not.toMatch(/\bDraft\b/);
  expect(doc).toContain('## Exit codes');
  // The problem codes are listed by hand (their meaning is prose the tables cannot give).
  for (const code of ['not-prepared', 'key-missing']) expect(doc).toContain(code);
  expect(Object.keys(PROBLEM_SEVERITY)).toContain('not-prepared');
});

it('renderCliDoc replaces only the marked regions and refuses a document without its markers', () => {
  const text = 'intro\n<!-- generated:a -->\nold\n<!-- /generated:a -->\noutro\n';
  expect(renderCliDoc(text, { a: 'new' })).toBe('intro\n<!-- generated:a -->\nnew\n<!-- /generated:a -->\noutro\n');
  expect(() => renderCliDoc('no markers', { a: 'x' })).toThrow(/lacks the markers/);
});
