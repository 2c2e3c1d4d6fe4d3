/**
 * Vite's `import.meta.glob` (vitest runs the tests through Vite), typed for the one use the
 * tests make of it: `family-tests.ts` finds the family test files by name.
 */
interface ImportMeta {
  glob<T>(pattern: string, options: { eager: true; import: string }): Record<string, T>;
}
