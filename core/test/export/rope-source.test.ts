/**
 * The one rope resolver (`families/config.ts` `ropeSource`): transformers v5's reading of
 * `rope_scaling` / `rope_parameters` / `rope_theta` (configuration_utils.py
 * `convert_rope_params_to_dict` @ bdf52342d8e725ea54973b3e3593be4717e9c1b0:
 * `rope_parameters = rope_scaling or rope_parameters`, then
 * `rope_parameters.setdefault("rope_theta", kwargs.pop("rope_theta", default_theta))`).
 */
import { describe, expect, it } from 'vitest';
import { ropeSource } from '../../src/export/families/config';

describe('ropeSource: v4 and v5 rope fields, read once', () => {
  it('v4: rope_theta with rope_scaling', () => {
    expect(ropeSource({ rope_theta: 5000, rope_scaling: { rope_type: 'linear', factor: 2 } }, 10000)).toEqual({
      theta: 5000,
      scaling: { rope_type: 'linear', factor: 2 },
    });
  });
  it('v5: rope_parameters carries rope_theta; its theta wins over a top-level one (setdefault)', () => {
    const p = { rope_type: 'default', rope_theta: 7000 };
    expect(ropeSource({ rope_parameters: p }, 10000)).toEqual({ theta: 7000, scaling: p });
    expect(ropeSource({ rope_theta: 3000, rope_parameters: p }, 10000).theta).toBe(7000);
  });
  it('rope_scaling, when set, is the dict (rope_scaling or rope_parameters); an empty dict counts as absent', () => {
    const s = { rope_type: 'linear', factor: 4 };
    expect(ropeSource({ rope_scaling: s, rope_parameters: { rope_type: 'default', rope_theta: 1 } }, 10000)).toEqual({
      theta: 10000,
      scaling: s,
    });
    expect(ropeSource({ rope_scaling: {}, rope_parameters: { rope_type: 'default', rope_theta: 9 } }, 10000).theta).toBe(9);
  });
  it("nothing set: the family's default theta and no scaling", () => {
    expect(ropeSource({}, 500000)).toEqual({ theta: 500000, scaling: null });
    expect(ropeSource({ rope_scaling: null, rope_parameters: null }, 10000)).toEqual({ theta: 10000, scaling: null });
  });
});
