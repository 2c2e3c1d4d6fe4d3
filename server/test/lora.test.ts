// Issue #46 in the editor: a LoRA export's spec names the stacked adapter tensors
// (`<module>.lora_a_weights` / `lora_b_weights` in lora-adapters.safetensors). Before prepare
// they are checked against prepare's plan of the base and the adapters the export report
// names, exactly as checkpoint keys are: no error for the planned keys, key-missing with a
// suggestion for a misspelled one. Over real JSON-RPC, on an export of the llama_lora fixture.
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliStdout } from '../../test/support/cli';
import { BUILT_LORA, describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { startInMemory, type TestClient } from './harness';

const tmp = tempDirs('ws-srv-lora-');

describeFixtures('the server checks adapter keys like checkpoint keys', () => {
  let client: TestClient;
  let specFile: string;
  beforeAll(async () => {
    const out = path.join(tmp(), 'e');
    const lora = path.join(fixturesDir(), BUILT_LORA[0]);
    await cliStdout(
      undefined,
      'export',
      '--config',
      path.join(fixturesDir(), 'llama'),
      '--out',
      out,
      '--lora',
      path.join(lora, 'adapter_a'),
      '--lora',
      path.join(lora, 'adapter_b'),
    );
    specFile = path.join(out, 'weight_spec.json');
    client = await startInMemory();
  });
  afterAll(() => client?.close());

  it('planned adapter keys check clean; a misspelled one is key-missing with the right key suggested', async () => {
    const { uri, text, diagnostics } = await client.open(specFile);
    expect(text).toContain('"key": "model.layers.1.mlp.down_proj.lora_b_weights"');
    expect(diagnostics.filter((d) => d.severity === 1)).toEqual([]);
    const good = '"key": "model.layers.0.self_attn.q_proj.lora_a_weights"';
    const at = text.indexOf(good);
    const after = await client.edit(uri, at + 8, at + good.length - 1, 'model.layers.0.self_attn.q_proj.lora_a_weight');
    const errors = after.filter((d) => d.severity === 1);
    expect(errors.map((d) => d.code)).toEqual(['key-missing']);
    expect(errors[0]!.message).toContain('did you mean "model.layers.0.self_attn.q_proj.lora_a_weights"');
  });
});
