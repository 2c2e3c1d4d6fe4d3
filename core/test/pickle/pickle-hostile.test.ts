/**
 * Hostile pickles: every global outside the state-dict allow-list, object-construction
 * opcodes, nested-REDUCE tricks, memo abuse, deep nesting and lying lengths must end in one
 * FormatError — and nothing may run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import { decodeStateDict, openTorchBin, unpickle, allowedGlobal } from '../../src/formats/pickle';
import { Pk, buildTorchBin, stateDictPickle } from '../support/pickle-build';

const tmp = tempDirs('ws-hostile-')();
const canary = path.join(tmp, 'pwned');

function refused(pkl: Uint8Array, re: RegExp): FormatError {
  let err: unknown;
  try {
    decodeStateDict(pkl, 'evil.bin', 1000);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(FormatError);
  const fe = err as FormatError;
  expect(fe.message).toMatch(re);
  expect(fe.message.startsWith('evil.bin: ')).toBe(true);
  expect(fe.message.includes('\n')).toBe(false);
  expect(fs.existsSync(canary)).toBe(false);
  return fe;
}

/** `module.name(arg)` via GLOBAL (protocol 2) or STACK_GLOBAL (protocol 4). */
function call(module: string, name: string, arg: string, stack = false): Uint8Array {
  const p = new Pk().proto(stack ? 4 : 2);
  if (stack) p.stackGlobal(module, name);
  else p.global(module, name);
  return p.str(arg).raw(0x85, 0x52, 0x2e).bytes();
}

describe('globals outside the allow-list are refused before anything is built', () => {
  const evil: [string, string][] = [
    ['os', 'system'],
    ['posix', 'system'],
    ['nt', 'system'],
    ['builtins', 'eval'],
    ['builtins', 'exec'],
    ['__builtin__', 'eval'],
    ['builtins', 'getattr'],
    ['builtins', '__import__'],
    ['subprocess', 'Popen'],
    ['subprocess', 'check_output'],
    ['runpy', '_run_code'],
    ['pickle', 'loads'],
    ['codecs', 'decode'],
    ['_codecs', 'encode'],
    ['torch', 'load'],
    ['torch.serialization', 'load'],
    ['torch._utils', '_rebuild_from_type_v2'],
    ['torch._tensor', '_rebuild_from_type_v2'],
    ['torch', 'constructor'],
    ['torch', '__proto__'],
    ['torch', 'toString'],
    ['collections', 'defaultdict'],
    ['collections', 'OrderedDict.__class__'],
    ['numpy.core.multiarray', '_reconstruct'],
    ['torch ', 'FloatStorage'],
    ['TORCH', 'FloatStorage'],
  ];
  for (const [m, n] of evil) {
    it(`${m}.${n}`, () => {
      for (const stack of [false, true]) {
        const e = refused(call(m, n, `touch ${canary}`, stack), /refusing global/);
        expect(e.message).toContain(JSON.stringify(`${m}.${n}`));
        // Refused at the GLOBAL / STACK_GLOBAL opcode itself (absolute byte = base + position).
        expect(e.byte).toBe(stack ? 1000 + 2 + 2 + m.length + 1 + 2 + n.length + 1 : 1000 + 2);
      }
      expect(allowedGlobal(m, n)).toBe(false);
    });
  }

  it('allows exactly the state-dict globals', () => {
    for (const [m, n] of [
      ['collections', 'OrderedDict'],
      ['torch._utils', '_rebuild_tensor_v2'],
      ['torch._utils', '_rebuild_parameter'],
      ['torch', 'FloatStorage'],
      ['torch', 'BFloat16Storage'],
    ]) {
      expect(allowedGlobal(m!, n!)).toBe(true);
    }
  });
});

describe('construction opcodes and REDUCE tricks', () => {
  it('refuses INST, OBJ, NEWOBJ, NEWOBJ_EX and EXT*', () => {
    refused(Uint8Array.from([0x80, 2, 0x28, 0x69, ...Buffer.from('os\nsystem\n'), 0x2e]), /object construction/);
    refused(new Pk().proto(2).global('collections', 'OrderedDict').mark().raw(0x6f, 0x2e).bytes(), /object construction/);
    refused(new Pk().proto(2).global('collections', 'OrderedDict').raw(0x29, 0x81, 0x2e).bytes(), /object construction/);
    refused(new Pk().proto(4).global('collections', 'OrderedDict').raw(0x29, 0x7d, 0x92, 0x2e).bytes(), /object construction/);
    refused(Uint8Array.from([0x80, 2, 0x82, 1, 0x2e]), /extension-registry/);
  });

  it('refuses calling a value produced by REDUCE, a string, or a storage class', () => {
    // OrderedDict()() — calling the result of a call.
    refused(new Pk().proto(2).global('collections', 'OrderedDict').raw(0x29, 0x52, 0x29, 0x52, 0x2e).bytes(), /REDUCE calls dict/);
    refused(new Pk().proto(2).str('os.system').str('x').raw(0x85, 0x52, 0x2e).bytes(), /REDUCE calls str/);
    refused(new Pk().proto(2).global('torch', 'FloatStorage').raw(0x29, 0x52, 0x2e).bytes(), /calling torch\.FloatStorage is not allowed/);
    // args not a tuple
    refused(new Pk().proto(2).global('collections', 'OrderedDict').str('x').raw(0x52, 0x2e).bytes(), /not a tuple/);
    // _rebuild_tensor_v2 with a non-storage
    refused(
      new Pk().proto(2).global('torch._utils', '_rebuild_tensor_v2').mark().str('x').int(0).raw(0x29, 0x29, 0x89, 0x74, 0x52, 0x2e).bytes(),
      /needs a storage/,
    );
  });

  it('refuses BUILD on anything but a dict, and persistent ids that are not storages', () => {
    refused(new Pk().proto(2).str('x').raw(0x7d, 0x62, 0x2e).bytes(), /BUILD on str/);
    refused(new Pk().proto(2).str('anything').raw(0x51, 0x2e).bytes(), /not a torch storage reference/);
    const pid = (cls: [string, string], key: string) =>
      new Pk()
        .proto(2)
        .mark()
        .str('storage')
        .global(...cls)
        .str(key)
        .str('cpu')
        .int(4)
        .raw(0x74, 0x51, 0x2e)
        .bytes();
    refused(pid(['collections', 'OrderedDict'], '0'), /storage type .* is not a torch storage class/);
    refused(pid(['torch', 'FloatStorage'], '../../etc/passwd'), /bad storage key/);
  });
});

describe('resource abuse', () => {
  it('refuses an undefined memo index (huge LONG_BINGET) without allocating', () => {
    refused(new Pk().proto(2).raw(0x6a).u32(0xffffffff).raw(0x2e).bytes(), /memo entry 4294967295 is not defined/);
    // A huge LONG_BINPUT index is just a key, not an array size.
    refused(new Pk().proto(2).raw(0x4e, 0x72).u32(0xfffffffe).raw(0x2e).bytes(), /holds None, not a state dict/);
  });

  it('bounds the memo, the stack and the MARK depth', () => {
    const memo = new Pk().proto(2).raw(0x4e);
    for (let i = 0; i < 200; i++) memo.raw(0x72).u32(i);
    expect(() => unpickle(memo.raw(0x2e).bytes(), hooksFor(), { maxMemo: 100 })).toThrow(/memo exceeds 100/);
    const marks = new Pk().proto(2);
    for (let i = 0; i < 70_000; i++) marks.mark();
    refused(marks.raw(0x2e).bytes(), /nested MARKs/);
    const nones = new Pk().proto(2);
    for (let i = 0; i < 300; i++) nones.raw(0x4e);
    expect(() => unpickle(nones.raw(0x2e).bytes(), hooksFor(), { maxStack: 256 })).toThrow(/stack exceeds 256/);
  });

  it('handles a million-deep nesting without recursion, then refuses it as not a state dict', () => {
    const p = new Pk().proto(2).raw(0x29);
    for (let i = 0; i < 1_000_000; i++) p.raw(0x85); // TUPLE1 around the previous value
    const t0 = Date.now();
    refused(p.raw(0x2e).bytes(), /holds tuple\[1\], not a state dict/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('refuses lying lengths and truncation', () => {
    refused(new Pk().proto(2).raw(0x58).u32(0xffffffff).raw(0x41, 0x2e).bytes(), /needs 4294967295 bytes but the pickle ends/);
    refused(
      new Pk()
        .proto(4)
        .raw(0x8e)
        .u64(1n << 60n)
        .raw(0x2e)
        .bytes(),
      /needs \d+ bytes but the pickle ends/,
    );
    refused(
      new Pk()
        .proto(4)
        .raw(0x95)
        .u64(1n << 62n)
        .raw(0x2e)
        .bytes(),
      /FRAME longer than the pickle/,
    );
    refused(
      new Pk()
        .proto(2)
        .raw(0x8b)
        .u32(1 << 30)
        .bytes(),
      /LONG4 of \d+ bytes refused/,
    );
    refused(new Pk().proto(9).raw(0x4e, 0x2e).bytes(), /unsupported pickle protocol 9/);
    const good = stateDictPickle([
      { key: 'w', storageKey: '0', storageType: 'FloatStorage', storageNumel: 4, offset: 0, shape: [4], stride: [1] },
    ]);
    for (const cut of [1, 10, 40, good.length - 1]) refused(good.subarray(0, cut), /pickle/);
    refused(Uint8Array.from([0x80, 2, 0x30, 0x2e]), /stack underflow/);
    refused(Uint8Array.from([0x80, 2, 0x4e, 0x4e, 0x2e]), /STOP with 2 stack items/);
    refused(Uint8Array.from([0x80, 2, 0x8c, 2, 0xc3, 0x28, 0x2e]), /not valid UTF-8/);
    refused(Uint8Array.from([0x80, 2, 0xff, 0x2e]), /unsupported opcode 0xff/);
  });
});

describe('tensor metadata lies', () => {
  const desc = (over: Partial<Parameters<typeof stateDictPickle>[0][0]>) =>
    stateDictPickle([
      { key: 'w', storageKey: '0', storageType: 'FloatStorage', storageNumel: 4, offset: 0, shape: [4], stride: [1], ...over },
    ]);

  it('rejects a claimed 2^60-element tensor from the header, never allocating it', () => {
    refused(desc({ shape: [2 ** 30, 2 ** 30], stride: [2 ** 30, 1] }), /impossible shape \[1073741824, 1073741824\]/);
    refused(desc({ shape: [2 ** 20, 2 ** 20], stride: [2 ** 20, 1] }), /reaches past its storage of 4 elements/);
    refused(desc({ storageNumel: 2 ** 60, shape: [2 ** 60], stride: [1] }), /storage size must be a non-negative integer|too large/);
  });

  it('rejects offsets and strides reaching past the storage, negative and non-integer fields', () => {
    refused(desc({ offset: 1 }), /reaches past its storage of 4 elements/);
    refused(desc({ shape: [3], stride: [2] }), /reaches past/);
    refused(desc({ offset: -1 }), /storage offset must be a non-negative integer/);
    refused(desc({ shape: [-4] }), /size\[0\] must be a non-negative integer/);
    refused(desc({ shape: [4, 1], stride: [1] }), /size has 2 dims but stride 1/);
  });

  it('checks storage sizes against the zip on open (a lying numel)', async () => {
    const f = path.join(tmp, 'lie.bin');
    fs.writeFileSync(f, buildTorchBin(desc({ storageNumel: 1_000_000, shape: [1_000_000] }), { '0': new Uint8Array(16) }));
    await expect(openTorchBin(f)).rejects.toThrow(/storage 0 holds 16 bytes but 4000000 are declared/);
  });

  it('refuses an os.system pickle inside a real .bin and runs nothing', async () => {
    const f = path.join(tmp, 'evil.bin');
    fs.writeFileSync(f, buildTorchBin(call('os', 'system', `touch ${canary}`), {}));
    await expect(openTorchBin(f)).rejects.toThrow(/refusing global "os\.system"/);
    expect(fs.existsSync(canary)).toBe(false);
  });
});

function hooksFor() {
  return {
    file: 'evil.bin',
    allowGlobal: () => false,
    reduce: () => null,
    persistentLoad: () => null,
  };
}
