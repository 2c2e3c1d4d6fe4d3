// Clients other than VS Code (Neovim, Helix, Emacs) over real JSON-RPC: custom notifications
// only on request. The lenses' commands run by the server: commands.test.ts; watching without
// the client: fs-watch.test.ts; settings: settings.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { startInMemory, type TestClient } from './harness';
import { makeWorkspace } from './workspace';

const clients: TestClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});
async function start(opts: Parameters<typeof startInMemory>[0]): Promise<TestClient> {
  const c = await startInMemory(opts);
  clients.push(c);
  return c;
}

describe('weightSpec/specStateChanged', () => {
  it('is not sent to a client that did not declare it', async () => {
    const c = await start({});
    const ws = makeWorkspace();
    const { uri } = await c.open(ws.specFile);
    await c.replace(uri, ws.text(ws.spec()) + ' ');
    await c.request('weightSpec/specState', { uri }); // a round trip after the checks' hooks
    expect(c.published.length).toBeGreaterThanOrEqual(2);
    expect(c.specStateChanged).toEqual([]);
  });

  it('is sent after each check to a client that declared it in initializationOptions', async () => {
    const c = await start({ initializationOptions: { specStateChanged: true } });
    const ws = makeWorkspace();
    const { uri } = await c.open(ws.specFile);
    await c.replace(uri, ws.text(ws.spec()) + ' ');
    await c.request('weightSpec/specState', { uri });
    expect(c.specStateChanged).toEqual([uri, uri]);
  });

  it('is sent to a client that declared the experimental capability', async () => {
    const c = await start({ capabilities: { experimental: { weightSpec: { specStateChanged: true } } } });
    const ws = makeWorkspace();
    const { uri } = await c.open(ws.specFile);
    await c.request('weightSpec/specState', { uri });
    expect(c.specStateChanged).toEqual([uri]);
  });
});
