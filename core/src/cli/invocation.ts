/**
 * How the user can type this CLI again. `npm ci` does not put a package's own `bin` on PATH
 * (neither does `npx` in its folder: npm links only dependencies' bins), so after
 * `npm ci && npm run demo` a printed `weight-spec …` would be "command not found". Printed
 * commands use the form that runs: `weight-spec` when it was started through that command
 * (npm link / npm i -g .), otherwise `node <path to dist/cli.js>` relative to the working folder.
 */
import path from 'node:path';

/** How to put `weight-spec` on PATH, for the lines that print `node dist/cli.js`. */
export const INSTALL_HINT = 'to type `weight-spec` alone, install the command: npm link (in the repository folder) or npm i -g .';

/**
 * The command prefix that runs this CLI from `cwd`: `weight-spec` when `script` (process.argv[1])
 * is an installed command of that name, else `node <script relative to cwd>`.
 */
export function cliInvocation(cwd: string, script: string | undefined = process.argv[1]): string {
  if (!script || path.basename(script) === 'weight-spec') return 'weight-spec';
  const rel = path.relative(cwd, script);
  const shown = rel.startsWith('..') || path.isAbsolute(rel) ? script : rel;
  return `node ${/\s/.test(shown) ? JSON.stringify(shown) : shown}`;
}
