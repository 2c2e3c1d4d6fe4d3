/**
 * Entry point of dist/server.js: `node dist/server.js --stdio` (or `--node-ipc`, which the
 * extension uses). A stray exception is logged, never fatal: the editor keeps its server.
 */
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import { oneLine } from '../../core/src/errors';
import { createServer } from './server';

const connection = createConnection(ProposedFeatures.all);
createServer(connection);
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
