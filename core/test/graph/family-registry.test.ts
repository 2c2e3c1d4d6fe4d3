/**
 * The family registry (`core/src/export/families/registry.ts`, issue #29): one row per
 * family, read by every list that names families. Checks that each row is tested (a fixture of
 * its type with reference logits, or code-made configs of its type), that the readers answer
 * from the rows (supported types, `model_name`, key prefix, dense families refusing
 * expert-parallel), and that aliases and `architectures`-based recognition resolve.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixturesDir, haveFixtures, LEGACY_FAMILIES } from '../../../test/support/fixtures';
import { archFromConfig } from '../../src/export/families/arch-from-config';
import {
  FAMILIES,
  familyLookup,
  familyOf,
  familyOfConfig,
  familyTestConfigs,
  SUPPORTED_MODEL_TYPES,
} from '../../src/export/families/registry';
import type { FamilyRow } from '../../src/export/families/row';
import { modelClassName } from '../../src/export/exporter/layout';
import { baseModelPrefix } from '../../src/resolve/name-strategies';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

describe('family registry', () => {
  it('every row is tested: its fixture (reference logits) or code-made configs of its own type', () => {
    for (const f of FAMILIES) {
      const { fixture, configs = {} } = f.test;
      expect(fixture !== undefined || Object.keys(configs).length > 0, `${f.modelType} names no test`).toBe(true);
      for (const [name, cfg] of Object.entries(configs)) {
        expect(familyOfConfig(cfg), `${f.modelType}: test config ${name}`).toBe(f);
        expect(SYNTHETIC_CONFIGS[name]).toBe(cfg);
        // each builds (the graph tests then judge it against an independent reference forward)
        expect(archFromConfig(cfg, name).layers.length).toBeGreaterThan(0);
      }
      if (fixture !== undefined && haveFixtures()) {
        const dir = path.join(fixturesDir(), fixture);
        expect(fs.existsSync(path.join(dir, 'reference.json')), `${fixture}/reference.json`).toBe(true);
        expect(familyOfConfig(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')))).toBe(f);
      }
    }
  });

  it('test config names are global: two rows naming the same config fail, and the real rows have none twice', () => {
    const [a, b] = FAMILIES.filter((f) => Object.keys(f.test.configs ?? {}).length > 0);
    const name = Object.keys(a!.test.configs!)[0]!;
    const clash: FamilyRow = { ...b!, test: { configs: { ...b!.test.configs, [name]: Object.values(b!.test.configs!)[0]! } } };
    expect(() => familyTestConfigs([a!, clash])).toThrow(`family registry: test config "${name}" is named twice`);
    const all = FAMILIES.flatMap((f) => Object.keys(f.test.configs ?? {}));
    expect(new Set(all).size).toBe(all.length);
    expect(Object.keys(familyTestConfigs()).sort()).toEqual([...all].sort());
  });

  it('the fixture suites iterate exactly the rows’ fixtures (LEGACY_FAMILIES names no family the registry does not)', () => {
    // LEGACY_FAMILIES (test/support/fixtures.ts) is what the fixture suites loop over; a row
    // whose fixture is missing there would never be judged by its reference logits, and a
    // fixture there without a row would be judged under no family.
    const rows = FAMILIES.flatMap((f) => (f.test.fixture !== undefined ? [f.test.fixture] : []));
    expect([...LEGACY_FAMILIES].sort()).toEqual([...rows].sort());
  });

  it('the supported model types, the refusal message and dense families come from the rows', () => {
    expect(SUPPORTED_MODEL_TYPES).toEqual(FAMILIES.map((f) => f.modelType));
    expect(() => familyOf({ model_type: 'bert' }, 'c.json')).toThrow(
      `c.json: model_type "bert" is not supported by --config export (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`,
    );
    expect(() => familyOf({}, 'c.json')).toThrow('c.json: "model_type" is missing');
    for (const f of FAMILIES.filter((r) => r.moe === 'none')) {
      const cfg = Object.values(f.test.configs ?? {})[0];
      if (!cfg) continue;
      expect(() => archFromConfig(cfg, 'c.json', { expertParallel: { stages: 2 } }), f.modelType).toThrow(
        'c.json: --moe-flavour expert_parallel, but this model has no MoE experts',
      );
    }
  });

  it('model_name and the key prefix are the row’s when config.json does not say', () => {
    for (const f of FAMILIES) {
      expect(modelClassName({ model_type: f.modelType }, 'dir')).toBe(f.hfClass);
      expect(modelClassName({ model_type: f.modelType, architectures: ['Custom'] }, 'dir')).toBe('Custom');
      expect(baseModelPrefix({ model_type: f.modelType })).toBe(f.keyPrefix ?? 'model');
    }
    expect(baseModelPrefix({ model_type: 'gpt2' })).toBe('transformer');
    expect(baseModelPrefix({ model_type: 'llama' })).toBe('model');
    expect(baseModelPrefix({ model_type: 'bloom' })).toBe('transformer'); // no row: HF's base_model_prefix
    expect(modelClassName({ model_type: 'bert' }, 'dir')).toBe('dir');
  });

  it('aliases and architectures-based recognition (configs without model_type)', () => {
    const row = (modelType: string, extra: Partial<FamilyRow>): FamilyRow => ({
      modelType,
      hfClass: 'X',
      keyPrefix: 'model',
      moe: 'none',
      build: () => {
        throw new Error('unused');
      },
      test: {},
      ...extra,
    });
    const grok = row('grok-1', { architectures: ['Grok1ModelForCausalLM'] });
    const ds = row('deepseek_v3', { aliases: ['kimi_k2'] });
    const mpt = row('mpt', { architectures: ['MPTForCausalLM', 'MptForCausalLM'] });
    const of = familyLookup([grok, ds, mpt]);
    expect(of({ architectures: ['Grok1ModelForCausalLM'] })).toBe(grok);
    expect(of({ model_type: 'kimi_k2' })).toBe(ds);
    expect(of({ model_type: 'deepseek_v3' })).toBe(ds);
    expect(of({ architectures: ['MptForCausalLM'] })).toBe(mpt);
    expect(of({ architectures: ['MPTForCausalLM'] })).toBe(mpt);
    // a config that names a model_type is judged by it, never by its class
    expect(of({ model_type: 'other', architectures: ['Grok1ModelForCausalLM'] })).toBeUndefined();
    expect(() => familyLookup([ds, row('kimi_k2', {})])).toThrow('model_type "kimi_k2" is claimed twice');
  });
});
