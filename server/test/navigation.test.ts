// Issue 50.2: navigation from a spec to the checkpoint over real JSON-RPC — Go to Definition on
// a key answers its shard (at the tensor, `#tensor=<key>`, for a client with tensorLinks: the
// extension opens its checkpoint viewer there), on a `files[].path` the shard itself; the
// hover's shard and op lines are links. On a workspace made in code, and on a real export of
// the llama fixture prepared after the export (no link yet: found through the report).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hover, Location } from 'vscode-languageserver-protocol';
import { CLIENT_COMMANDS, parseTensorLink } from '../../core/src/protocol';
import { cliInProcess } from '../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { positionOf, startInMemory, type TestClient } from './harness';
import { makeWorkspace } from './workspace';

const tmp = tempDirs('ws-srv-nav-');

/** The position inside the string value that follows `"<field>": "<value>"` in `text`. */
function inside(text: string, field: string, value: string, nth = 0) {
  let at = -1;
  for (let i = 0; i <= nth; i++) at = text.indexOf(`"${field}": "${value}"`, at + 1);
  expect(at).toBeGreaterThanOrEqual(0);
  return positionOf(text, at + field.length + 6);
}

describe('Go to Definition and hover links on a workspace spec', () => {
  let links: TestClient;
  let plain: TestClient;
  let ws: ReturnType<typeof makeWorkspace>;
  beforeAll(async () => {
    ws = makeWorkspace();
    links = await startInMemory({ initializationOptions: { tensorLinks: true } });
    plain = await startInMemory();
  });
  afterAll(() => {
    links.close();
    plain.close();
  });

  it('on a key: the shard holding it, at the tensor for a client with tensorLinks', async () => {
    const { uri, text } = await links.open(ws.specFile);
    const def = await links.request<Location>('textDocument/definition', {
      textDocument: { uri },
      position: inside(text, 'key', 'lm_head.weight'),
    });
    const t = parseTensorLink(def.uri);
    expect(t).toEqual({ fileUri: pathToFileURL(path.join(ws.dir, 'ckpt', 'b.safetensors')).toString(), key: 'lm_head.weight' });
    expect(def.range).toEqual({ start: { line: 0, character: 0 }, end: { line: 0, character: 0 } });

    const p = await plain.open(ws.specFile);
    const pdef = await plain.request<Location>('textDocument/definition', {
      textDocument: { uri: p.uri },
      position: inside(p.text, 'key', 'model.embed_tokens.weight'),
    });
    // other clients get the shard's plain file URI
    expect(pdef.uri).toBe(pathToFileURL(path.join(ws.dir, 'ckpt', 'a.safetensors')).toString());
    expect(parseTensorLink(pdef.uri)).toBeUndefined();
  });

  it('on a file path: the shard; on a name or a key no shard holds: nothing', async () => {
    const { uri, text } = await links.open(ws.specFile);
    const def = await links.request<Location>('textDocument/definition', {
      textDocument: { uri },
      position: inside(text, 'path', 'ckpt/b.safetensors'),
    });
    expect(fileURLToPath(def.uri)).toBe(path.join(ws.dir, 'ckpt', 'b.safetensors'));
    const name = await links.request<Location | null>('textDocument/definition', {
      textDocument: { uri },
      position: inside(text, 'name', 'lm_head.weight'),
    });
    expect(name).toBeNull();
    const s = ws.spec();
    s.inputs[4]!.location.key = 'lm_head.weight.typo';
    const typo = ws.text(s);
    await links.replace(uri, typo);
    const none = await links.request<Location | null>('textDocument/definition', {
      textDocument: { uri },
      position: inside(typo, 'key', 'lm_head.weight.typo'),
    });
    expect(none).toBeNull();
  });

  it("the hover's shard line runs openTensor (tensorLinks) or links the file", async () => {
    const { uri, text } = await links.open(ws.specFile);
    const h = await links.request<Hover>('textDocument/hover', {
      textDocument: { uri },
      position: inside(text, 'key', 'model.norm.weight'),
    });
    const value = (h.contents as { value: string }).value;
    const m = /shard \[`b\.safetensors`\]\(command:([^?]+)\?([^)]+)\)/.exec(value);
    expect(m?.[1]).toBe(CLIENT_COMMANDS.openTensor);
    expect(JSON.parse(decodeURIComponent(m![2]!))).toEqual([path.join(ws.dir, 'ckpt', 'b.safetensors'), 'model.norm.weight']);

    const p = await plain.open(ws.specFile);
    const ph = await plain.request<Hover>('textDocument/hover', {
      textDocument: { uri: p.uri },
      position: inside(p.text, 'key', 'model.norm.weight'),
    });
    expect((ph.contents as { value: string }).value).toContain(
      `shard [\`b.safetensors\`](${pathToFileURL(path.join(ws.dir, 'ckpt', 'b.safetensors')).toString()})`,
    );
  });
});

describeFixtures('navigation on a llama export prepared after the export', () => {
  let client: TestClient;
  let exp: string;
  let prepared: string;
  beforeAll(async () => {
    const dir = tmp();
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(dir, 'llama'), { recursive: true });
    exp = path.join(dir, 'exp');
    expect((await cliInProcess(['export', '--config', path.join(dir, 'llama'), '--out', exp])).code).toBe(0);
    expect((await cliInProcess(['prepare', '--checkpoint', path.join(dir, 'llama'), '--dtype', 'float32'])).code).toBe(0);
    prepared = (JSON.parse(fs.readFileSync(path.join(exp, 'export-report.json'), 'utf8')) as { prepared: { dir: string } }).prepared.dir;
    expect(fs.existsSync(path.join(exp, path.basename(prepared)))).toBe(false); // no link: found through the report
    client = await startInMemory({ initializationOptions: { tensorLinks: true } });
  }, 60_000);
  afterAll(() => client?.close());

  it('F12 on a key opens the prepared shard at the tensor; the op names link to the graph', async () => {
    const { uri, text } = await client.open(path.join(exp, 'weight_spec.json'));
    const key = 'model.layers.0.self_attn.q_proj.weight';
    const def = await client.request<Location>('textDocument/definition', { textDocument: { uri }, position: inside(text, 'key', key) });
    const t = parseTensorLink(def.uri)!;
    expect(t.key).toBe(key);
    const file = fileURLToPath(t.fileUri);
    expect(path.dirname(file)).toBe(prepared);
    expect(fs.existsSync(file)).toBe(true);
    const h = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: inside(text, 'key', key) });
    const used = (h.contents as { value: string }).value.split('\n\n').find((l) => l.startsWith('used by: '))!;
    const onnx = pathToFileURL(path.join(exp, 'model.onnx')).toString();
    const ops = [...used.matchAll(/\[`([^`]+)`\]\(([^)]+)\)/g)];
    expect(ops.length).toBeGreaterThan(0);
    for (const o of ops) expect(o[2]).toBe(onnx);
  });
});
