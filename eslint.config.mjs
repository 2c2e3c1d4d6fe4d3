// ESLint flat config (typescript-eslint), as rust-analyzer's editors/code and vscode-eslint use:
// @eslint/js and typescript-eslint's recommended rules, tuned only where this code base is
// deliberate. `npm run lint`; formatting is prettier's (`npm run format:check`), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Node's globals the scripts use (no `globals` package needed for a handful). */
const nodeGlobals = Object.fromEntries(
  [
    'console',
    'process',
    'Buffer',
    'URL',
    'TextEncoder',
    'TextDecoder',
    'performance',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'queueMicrotask',
    'structuredClone',
    'AbortController',
    'fetch',
    '__dirname',
    'require',
    'module',
  ].map((g) => [g, 'readonly']),
);

/**
 * Tests make temp directories only through `tempDirs()` (test/support/temp.ts), which removes
 * them after the file; a hand-made `mkdtemp` + `rmSync` leaks whenever the test fails before
 * its cleanup (issue #15.8), and vitest's temp-guard then fails the whole run. Checked by
 * core/test/architecture/temp-hygiene.test.ts.
 */
const tempRestrictions = [
  ...['mkdtemp', 'mkdtempSync', 'tmpdir'].flatMap((name) =>
    ['name', 'property.name'].map((callee) => ({
      selector: `CallExpression[callee.${callee}='${name}']`,
      message: `${name}() in a test: make temp dirs with tempDirs() from test/support/temp.ts`,
    })),
  ),
  // vitest never runs the afterAll that tempDirs() registers from inside a test or a hook
  ...['callee.name', 'callee.object.name', 'callee.callee.object.name'].map((callee) => ({
    selector: `CallExpression[${callee}=/^(it|test|beforeAll|beforeEach|afterAll|afterEach)$/] CallExpression[callee.name='tempDirs']`,
    message: 'tempDirs() inside a test or hook: call it at the top level of the file (its cleanup is an afterAll)',
  })),
];

/**
 * One way to read a file the tool did not write (issue #43): core/src/paths' read policy
 * (`readRegularFile`, `readJsonText`, `openRegularFile`, …) checks the kind before it opens and
 * caps the size before the first byte. A plain `readFile`/`readFileSync` elsewhere in the
 * programs' sources fails the lint (and core/test/architecture/read-policy.test.ts); the few
 * reads of the kernel's own files (/proc) carry an eslint-disable comment saying so.
 */
const readRestrictions = ['callee.name', 'callee.property.name'].map((callee) => ({
  selector: `CallExpression[${callee}=/^(readFile|readFileSync)$/]`,
  message: 'read input files through core/src/paths (readRegularFile, readJsonText, …): kind check and size cap before the first byte',
}));

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.e2e/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: nodeGlobals },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `_x` marks a parameter or binding kept on purpose (a signature, a rest-sibling omission).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // TypeScript checks names itself (and knows the DOM/Node types ESLint does not).
    files: ['**/*.ts', '**/*.mts'],
    rules: { 'no-undef': 'off' },
  },
  {
    // Tests build hostile input on purpose (numbers beyond double precision) and list test
    // data as call sequences (`add(a), add(b);`).
    files: ['**/test/**'],
    rules: { 'no-loss-of-precision': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
  {
    files: ['core/src/**/*.ts', 'server/src/**/*.ts', 'client/src/**/*.ts'],
    ignores: ['core/src/paths/**'],
    rules: { 'no-restricted-syntax': ['error', ...readRestrictions] },
  },
  {
    // The vitest suites and their helpers. Not test/e2e: the VS Code runner is its own program
    // outside vitest, which keeps its scratch folder (logs) when a run fails, on purpose.
    files: ['core/test/**', 'server/test/**', 'client/test/**', 'test/support/**'],
    ignores: ['test/support/temp.ts', 'test/support/temp-guard.ts'],
    rules: { 'no-restricted-syntax': ['error', ...tempRestrictions] },
  },
);
