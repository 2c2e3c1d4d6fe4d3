/**
 * Entry point of dist/server.js: `node dist/server.js --stdio` (or `--node-ipc`, which the
 * extension uses). A stray exception is logged, never fatal: the editor keeps its server.
 */
import path from 'node:path';
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { oneLine } from '../../core/src/errors';
import { createServer } from './server';

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
