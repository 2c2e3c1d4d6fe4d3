/**
 * Entry point of dist/server.js: `node dist/server.js --stdio` (or `--node-ipc`, which the
 * extension uses); the `weight-spec-language-server` bin is this file (stdio by default). A
 * stray exception is logged, never fatal: the editor keeps its server.
 */
import path from 'node:path';
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { oneLine } from '../../core/src/errors';
import { createServer } from './server';

// Started as the `weight-spec-language-server` bin without a transport: stdio, as editors expect.
if (!process.argv.slice(2).some((a) => /^--(stdio|node-ipc|socket|pipe)\b/.test(a))) process.argv.push('--stdio');
const connection = createConnection(ProposedFeatures.all);
// dist/cli.js sits beside this bundle (dist/server.js); the server's commands run it.
createServer(connection, { cliPath: path.join(__dirname, 'cli.js') });
const report = (what: string) => (err: unknown) => {
  try {
    connection.console.error(`${what}: ${oneLine(err)}`);
  } catch {
    process.stderr.write(`weight-spec server ${what}: ${oneLine(err)}\n`);
  }
};
process.on('uncaughtException', report('uncaught exception'));
process.on('unhandledRejection', report('unhandled rejection'));
connection.listen();
