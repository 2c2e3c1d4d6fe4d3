/**
 * The one table of onnx.proto field numbers (formats/onnx/fields.ts) against the schema text
 * itself (formats/onnx/schema.ts, the official onnx.proto), parsed by protobufjs with the
 * proto's own snake_case names: every number the wire walkers and writers use is onnx.proto's.
 */
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { attributeHoldsGraph, FIELD, fieldName, WIRE } from '../../src/formats/onnx/fields';
import { ONNX_PROTO } from '../../src/formats/onnx/schema';
import { AttributeType, TensorDataType } from '../../src/formats/onnx/types';
import { dtypeOfOnnx, DTYPES, onnxTypeOf } from '../../src/formats/dtype';

const root = protobuf.parse(ONNX_PROTO, { keepCase: true }).root;

describe('onnx.proto field numbers', () => {
  for (const [msg, fields] of Object.entries(FIELD)) {
    it(`${msg}: every field's number is the schema's`, () => {
      const type = root.lookupType(`onnx.${msg}`);
      for (const [name, n] of Object.entries(fields)) {
        expect(type.fields[name], `${msg}.${name} is not in onnx.proto`).toBeDefined();
        expect(n, `${msg}.${name}`).toBe(type.fields[name]!.id);
      }
    });
  }

  it('TensorDataType and AttributeType are the schema enums', () => {
    expect(TensorDataType).toEqual(root.lookupEnum('onnx.TensorProto.DataType').values);
    expect(AttributeType).toEqual(root.lookupEnum('onnx.AttributeProto.AttributeType').values);
    expect(FIELD.TensorProto.data_location).toBe(root.lookupType('onnx.TensorProto').fields.data_location!.id);
  });

  it('every dtype maps to the ONNX type of the same name and back', () => {
    const names: Record<string, string> = {
      F64: 'DOUBLE',
      F32: 'FLOAT',
      F16: 'FLOAT16',
      BF16: 'BFLOAT16',
      F8_E4M3: 'FLOAT8E4M3FN',
      F8_E5M2: 'FLOAT8E5M2',
      F8_E8M0: 'FLOAT8E8M0',
      BOOL: 'BOOL',
    };
    const ints: Record<string, string> = { I: 'INT', U: 'UINT' };
    for (const d of DTYPES) {
      const want = names[d] ?? `${ints[d[0]!]}${d.slice(1)}`;
      expect(onnxTypeOf(d), d).toBe(TensorDataType[want as keyof typeof TensorDataType]);
      expect(dtypeOfOnnx(onnxTypeOf(d))).toBe(d);
    }
  });

  it('names fields for error text; finds subgraph attributes by field or by type', () => {
    expect(fieldName('ModelProto', 7)).toBe('graph');
    expect(fieldName('ModelProto', 99)).toBeUndefined();
    const A = FIELD.AttributeProto;
    expect(
      attributeHoldsGraph([
        { field: A.name, wire: WIRE.LEN },
        { field: A.g, wire: WIRE.LEN },
      ]),
    ).toBe(true);
    expect(attributeHoldsGraph([{ field: A.type, wire: WIRE.VARINT, int: AttributeType.GRAPHS }])).toBe(true);
    expect(
      attributeHoldsGraph([
        { field: A.i, wire: WIRE.VARINT, int: 5 },
        { field: A.type, wire: WIRE.VARINT, int: AttributeType.INT },
      ]),
    ).toBe(false);
  });
});
