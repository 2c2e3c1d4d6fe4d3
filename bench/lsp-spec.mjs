// The inputs of the language-server bench (lsp.bench.mjs): a spec of n inputs over a checkpoint
// of n keys (safetensors files with F32 [2] tensors), offset → line/character conversion, and the
// anchor: VS Code's JSON service run on a spec.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The key of input `i`. */
export const key = (i) => `model.layers.${Math.floor(i / 10)}.mlp.proj_${i % 10}.weight`;
function safetensors(keys) {
  const header = {};
  keys.forEach((k, j) => (header[k] = { dtype: 'F32', shape: [2], data_offsets: [j * 8, j * 8 + 8] }));
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([len, Buffer.from(json), Buffer.alloc(keys.length * 8)]);
}
/** A spec of `n` inputs in `tmp`/n<n> over a checkpoint of `n` keys in `shards` safetensors files. */
export function makeSpec(tmp, n, shards) {
  const dir = path.join(tmp, `n${n}`);
  mkdirSync(path.join(dir, 'ckpt'), { recursive: true });
  const files = [];
  const inputs = [];
  for (let s = 0; s < shards; s++) {
    const keys = [];
    for (let i = s; i < n; i += shards) {
      keys.push(key(i));
      inputs.push({ location: { file: s, key: key(i) }, name: key(i) });
    }
    const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
    writeFileSync(path.join(dir, 'ckpt', name), safetensors(keys));
    files.push({ format: 'safetensors', path: `ckpt/${name}` });
  }
  const file = path.join(dir, 'weight_spec.json');
  const text = JSON.stringify({ files, inputs, model_name: 'bench', version: 5 }, null, 2);
  writeFileSync(file, text);
  // the edit point: inside the key string of the middle input
  return { n, dir, file, text, uri: pathToFileURL(file).href, at: text.indexOf(`"key": "${key(n >> 1)}"`) + 8 };
}

/** Line/character of every offset, from a line-start table. */
export function positions(text) {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, character: offset - starts[lo] };
  };
}

/** VS Code's JSON service (json-service-child.mjs, a fresh process) on `spec` with `schemaFile`: its cold and edit times. */
export function jsonService(schemaFile, spec, edits) {
  const r = spawnSync(
    process.execPath,
    [path.join(here, 'json-service-child.mjs'), schemaFile, spec.file, String(spec.at), String(edits)],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) {
    console.error(`lsp.bench: the JSON service failed: ${r.stderr.trim()}`);
    process.exit(1);
  }
  const res = JSON.parse(r.stdout);
  if (res.diagnostics !== 0) {
    console.error(
      `lsp.bench: the JSON service reports ${res.diagnostics} problems on the valid spec (${res.firstMessage}); the schema does not fit`,
    );
    process.exit(1);
  }
  return res;
}
