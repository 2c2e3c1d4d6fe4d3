/**
 * Multi-device partitioning (issue 47): `compile --backend qaic --num-devices N [--pipeline-partitions P]`
 * against QEfficient main ebf55e81:
 * - `QEfficient/compile/mdp_generator.py` `generate_mdp_partition_config` (one p2p connection
 *   over devices 0…N−1, one Partition0 with numCores per device) and
 *   `generate_disagg_mdp_partition_config` (ONNX strategy: nodes by layer, `_layer_partition_bounds`,
 *   compiler-folded nodes left out), transcribed to Python in test/support/qeff-qaic-rules.ts and
 *   run by python3-onnx on the exported graph;
 * - `QEfficient/base/modeling_qeff.py` `_compile`: the template config written as
 *   `<qpc-hash>/mdp_ts_{N}.json` with its `-mdp-load-partition-config` flag after the options; the
 *   pipeline config as `<compile_dir>/mdp_disagg_{N}d_{P}p.json` (the un-hashed folder: here the
 *   export folder) with its flag right after `-m`; `mdp_ts_num_devices`, `mdp_num_partitions` and
 *   `mdp_ts_json` in the hashed parameters.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { layerPartitionBounds } from '../../src/artifacts/mdp-partition';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures } from '../../../test/support/fixtures';
import { qeffDisaggMdp, qeffLayerBounds, qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { qpcOf, recordingFixture } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

const tmp = tempDirs('ws-qaic-mdp-');

/** The template config for 4 devices of 14 cores, as json.dump(indent=4, separators=(",", ":"), sort_keys=True) writes it — by hand. */
const DEVICE = (d: number) =>
  `                {\n                    "deviceId":${d},\n                    "numCores":14\n                }`;
const MDP_4x14 = [
  '{',
  '    "connections":[',
  '        {',
  '            "devices":[',
  '                0,',
  '                1,',
  '                2,',
  '                3',
  '            ],',
  '            "type":"p2p"',
  '        }',
  '    ],',
  '    "partitions":[',
  '        {',
  '            "devices":[',
  `${DEVICE(0)},\n${DEVICE(1)},\n${DEVICE(2)},\n${DEVICE(3)}`,
  '            ],',
  '            "name":"Partition0"',
  '        }',
  '    ]',
  '}',
].join('\n');

it('_layer_partition_bounds: equal to QEfficient’s for every layer count 1…40 and 1…8 partitions', () => {
  const pairs: [number, number][] = [];
  for (let l = 1; l <= 40; l++) for (let p = 1; p <= 8; p++) pairs.push([l, p]);
  expect(pairs.map(([l, p]) => layerPartitionBounds(l, p))).toEqual(qeffLayerBounds(pairs));
  // by hand: 40 layers in 3 → the middle takes the remainder: [13, 14, 13] → bounds 13, 27; 2 partitions: the first takes it
  expect(layerPartitionBounds(40, 3)).toEqual([13, 27]);
  expect(layerPartitionBounds(5, 2)).toEqual([3]);
});

it('--dry-run --num-devices 4 --num-cores 14 prints QEfficient’s template config and its flag after the options', async () => {
  const root = tmp();
  const model = path.join(root, 'mistral');
  fs.mkdirSync(model);
  fs.writeFileSync(path.join(model, 'config.json'), JSON.stringify(SYNTHETIC_CONFIGS.mistral));
  const out = path.join(root, 'export');
  expect((await cliInProcess(['export', '--config', model, '--out', out, '--ctx-len', '64'], { cwd: root })).code).toBe(0);
  const r = await cliInProcess(['compile', out, '--backend', 'qaic', '--dry-run', '--num-devices', '4', '--num-cores', '14'], {
    cwd: root,
    env: { WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') },
  });
  expect(r.code, r.stderr).toBe(0);
  const dir = /-aic-binary-dir=(\S+)\/qpc$/m.exec(r.stdout)![1]!;
  const command = r.stdout.split('\n')[0]!.split(' ');
  expect(command.slice(4)).toEqual([
    '-retained-state',
    '-convert-to-fp16',
    '-aic-num-cores=14',
    `-mdp-load-partition-config=${dir}/mdp_ts_4.json`,
    `-network-specialization-config=${dir}/specializations.json`,
    `-custom-IO-list-file=${dir}/custom_io.yaml`,
    `-aic-binary-dir=${dir}/qpc`,
  ]);
  expect(r.stdout).toContain(`--- ${dir}/mdp_ts_4.json\n${MDP_4x14}\n`);
  // more partitions than devices is QEfficient's ValueError, here a usage error
  const bad = await cliInProcess(['compile', out, '--backend', 'qaic', '--dry-run', '--num-devices', '2', '--pipeline-partitions', '3'], {
    cwd: root,
  });
  expect(bad.code).toBe(2);
  expect(bad.stderr.split('\n')[0]).toMatch(/Found 3 partitions and 2 devices/);
});

it('--pipeline-partitions 3 over 6 devices on a 7-layer graph: the config QEfficient generates from the same ONNX', async () => {
  const root = tmp();
  const model = path.join(root, 'mistral7');
  fs.mkdirSync(model);
  fs.writeFileSync(path.join(model, 'config.json'), JSON.stringify({ ...SYNTHETIC_CONFIGS.mistral, num_hidden_layers: 7 }));
  const out = path.join(root, 'export');
  expect((await cliInProcess(['export', '--config', model, '--out', out, '--ctx-len', '64'], { cwd: root })).code).toBe(0);
  const r = await cliInProcess(['compile', out, '--backend', 'qaic', '--dry-run', '--num-devices', '6', '--pipeline-partitions', '3'], {
    cwd: root,
    env: { WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') },
  });
  expect(r.code, r.stderr).toBe(0);
  const file = path.join(out, 'mdp_disagg_6d_3p.json');
  expect(r.stdout.split('\n')[0]!.split(' ').slice(3, 5)).toEqual([
    `-m=${path.join(out, 'model.onnx')}`,
    `-mdp-load-partition-config=${file}`,
  ]);
  const body = r.stdout.slice(r.stdout.indexOf(`--- ${file}\n`) + file.length + 5);
  const printed = JSON.parse(body.slice(0, body.indexOf('\n---') >= 0 ? body.indexOf('\n---') : undefined)) as {
    partitions: { nodeList: string[]; devices: unknown[] }[];
  };
  const want = qeffDisaggMdp({ onnx: path.join(out, 'model.onnx'), num_devices: 6, num_partitions: 3, num_layers: 7, num_cores: 16 });
  expect(printed).toEqual(want);
  // 7 layers in 3: [2, 3, 2] — layer 2…4 nodes in Partition1, the head after layer 6 in Partition2
  expect(printed.partitions.map((p) => p.devices.length)).toEqual([2, 2, 2]);
  expect(printed.partitions[1]!.nodeList.some((n) => n.startsWith('/layers.4/'))).toBe(true);
  expect(printed.partitions[2]!.nodeList.some((n) => n.startsWith('/head/'))).toBe(true);
  expect(fs.existsSync(file)).toBe(false); // a dry run writes nothing
});

describeFixtures('MDP through the recording compiler (llama fixture)', () => {
  const { root, bin, record, exportTo, compile } = recordingFixture(tmp, 'llama');
  const run = async (tag: string, comp: string[]) => {
    const out = path.join(root(), `export-${tag}`);
    await exportTo(out, ['--ctx-len', '64']);
    const r = await compile(out, comp);
    expect(r.code, r.stderr).toBe(0);
    return { out, qpc: qpcOf(r) };
  };
  const base = { batch_size: 1, full_batch_size: null, continuous_batching: false, decode_only: false, ccl: null, hw: 'ai100' };
  const common = { ...base, compiler: '', prefill_seq_len: 32, ctx_len: 64, num_layers: 2, mxfp6_matmul: false, mxint8_kv_cache: false };

  it('--num-devices 4 --num-cores 14: argv, mdp_ts_4.json and hashed_compile_params.json as _compile writes them', async () => {
    const { out, qpc } = await run('ts', ['--num-devices', '4', '--num-cores', '14']);
    const want = qeffQaicCompile({
      ...common,
      compiler: bin(),
      num_cores: 14,
      num_devices: 4,
      onnx: path.join(out, 'model.onnx'),
      compile_dir: qpc,
    });
    expect(fs.readFileSync(path.join(record(), 'argv'), 'utf8').trim().split('\n')).toEqual(want.argv);
    expect(want.mdp_path).toBe(path.join(qpc, 'mdp_ts_4.json'));
    expect(fs.readFileSync(path.join(qpc, 'mdp_ts_4.json'), 'utf8')).toBe(want.mdp);
    expect(want.mdp).toBe(MDP_4x14);
    const hashed = fs.readFileSync(path.join(qpc, 'hashed_compile_params.json'), 'utf8');
    expect(hashed).toBe(want.hashed);
    expect(JSON.parse(hashed)).toMatchObject({ mdp_ts_num_devices: 4, mdp_num_partitions: 1 });
  });

  it('--num-devices 2 --pipeline-partitions 2: the disagg config of the fixture graph, flag after -m', async () => {
    const { out, qpc } = await run('pp', ['--num-devices', '2', '--pipeline-partitions', '2']);
    const onnx = path.join(out, 'model.onnx');
    const disagg = qeffDisaggMdp({ onnx, num_devices: 2, num_partitions: 2, num_layers: 2, num_cores: 16 });
    const want = qeffQaicCompile({
      ...common,
      compiler: bin(),
      num_cores: 16,
      num_devices: 2,
      num_partitions: 2,
      disagg_json: disagg,
      onnx,
      compile_dir: qpc,
    });
    expect(fs.readFileSync(path.join(record(), 'argv'), 'utf8').trim().split('\n')).toEqual(want.argv);
    expect(want.mdp_path).toBe(path.join(out, 'mdp_disagg_2d_2p.json'));
    expect(fs.readFileSync(want.mdp_path!, 'utf8')).toBe(want.mdp);
    expect(fs.readFileSync(path.join(qpc, 'hashed_compile_params.json'), 'utf8')).toBe(want.hashed);
    const parts = (disagg as { partitions: { nodeList: string[] }[] }).partitions;
    expect(parts[0]!.nodeList.some((n) => n.startsWith('/layers.0/'))).toBe(true);
    expect(parts[1]!.nodeList.some((n) => n.startsWith('/layers.1/'))).toBe(true);
  });
});
