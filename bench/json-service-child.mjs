// The anchor of the language-server bench (lsp.bench.mjs): VS Code's own JSON language service
// (vscode-json-languageservice, the pinned dev dependency) validating a spec against a JSON
// schema of the weight_spec format, in a fresh process like a fresh JSON server. Prints one JSON
// line: the first validation (parse + doValidation, schema compiled on first use) and the
// re-validations after one-key edits applied as VS Code sends them (incremental range changes),
// each as wall time and as this process's CPU time (user + system, all threads: the garbage
// collector's helpers count, as they do for the server), in ms.
// Usage: node json-service-child.mjs <schema.json> <spec.json> <edit offset> <edits>
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { getLanguageService, TextDocument } = require('vscode-json-languageservice');
const [schemaFile, specFile, at, count] = process.argv.slice(2);
const schema = JSON.parse(readFileSync(schemaFile, 'utf8'));
const text = readFileSync(specFile, 'utf8');
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const cpuMs = (c0) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};

const ls = getLanguageService({});
ls.configure({
  validate: true,
  allowComments: false,
  schemas: [{ uri: 'inmemory://weight_spec.schema.json', fileMatch: ['*weight_spec.json'], schema }],
});
let doc = TextDocument.create('file:///bench/weight_spec.json', 'json', 1, text);
const validate = async () => ls.doValidation(doc, ls.parseJSONDocument(doc));

let c0 = process.cpuUsage();
let t0 = process.hrtime.bigint();
const first = await validate();
const cold = ms(t0);
const coldCpu = cpuMs(c0);
const edits = [];
const editsCpu = [];
const offset = Number(at);
let lastCount = first.length;
for (let k = 0; k < Number(count); k++) {
  const pos = doc.positionAt(offset);
  const change =
    k % 2 === 0 ? { range: { start: pos, end: pos }, text: 'x' } : { range: { start: pos, end: doc.positionAt(offset + 1) }, text: '' };
  c0 = process.cpuUsage();
  t0 = process.hrtime.bigint();
  doc = TextDocument.update(doc, [change], doc.version + 1);
  lastCount = (await validate()).length;
  edits.push(ms(t0));
  editsCpu.push(cpuMs(c0));
}
process.stdout.write(
  `${JSON.stringify({ cold, coldCpu, edits, editsCpu, diagnostics: first.length, lastCount, firstMessage: first[0]?.message })}\n`,
);
