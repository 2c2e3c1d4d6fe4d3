/**
 * What a PyTorch state dict may contain, and nothing more: the allow-list of globals, the
 * meaning of the few calls it makes (`OrderedDict()`, `_rebuild_tensor_v2`,
 * `_rebuild_parameter`), its persistent storage ids, and validation of each tensor's
 * offset/shape/stride against its storage before any byte is read.
 */
import { FormatError } from '../../errors';
import { printable } from '../../paths';
import { unpickle } from './unpickler';
import {
  PyDict,
  PyGlobal,
  PyTuple,
  describe,
  isStorageRef,
  isTensorRef,
  type BinDType,
  type PyValue,
  type StorageRef,
  type TensorRef,
} from './values';

/** torch storage class → element type. */
export const STORAGE_DTYPES: Record<string, BinDType> = {
  DoubleStorage: 'F64',
  FloatStorage: 'F32',
  HalfStorage: 'F16',
  BFloat16Storage: 'BF16',
  LongStorage: 'I64',
  IntStorage: 'I32',
  ShortStorage: 'I16',
  CharStorage: 'I8',
  ByteStorage: 'U8',
  BoolStorage: 'BOOL',
};

/** Bytes per element. */
export const BIN_DTYPE_SIZE: Record<BinDType, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

const REBUILDERS = new Set(['_rebuild_tensor_v2', '_rebuild_tensor', '_rebuild_parameter', '_rebuild_parameter_with_state']);

/** The complete allow-list: `collections.OrderedDict`, torch rebuild helpers and storage classes. */
export function allowedGlobal(module: string, name: string): boolean {
  if (module === 'collections' && name === 'OrderedDict') return true;
  if (module === 'torch._utils' && REBUILDERS.has(name)) return true;
  // hasOwn, not `in`: `torch.constructor` or `torch.__proto__` must not pass.
  if (module === 'torch') return Object.hasOwn(STORAGE_DTYPES, name) || name === 'UntypedStorage';
  return false;
}

/** A tensor of the state dict, validated against its storage. */
export interface BinTensor {
  key: string;
  dtype: BinDType;
  shape: number[];
  stride: number[];
  /** Element offset into the storage. */
  offset: number;
  storage: StorageRef;
  /** True when the bytes are one contiguous run of the storage. */
  contiguous: boolean;
  /** Bytes of the materialized tensor (numel × element size). */
  byteLength: number;
  /** Storage bytes that must be read: `[spanStart, spanStart+spanLength)`. */
  spanStart: number;
  spanLength: number;
}

function int(v: PyValue, what: string, file: string, at: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new FormatError(file, `${what} must be a non-negative integer, got ${describe(v)}`, at);
  return v;
}

function intTuple(v: PyValue, what: string, file: string, at: number): number[] {
  if (!(v instanceof PyTuple)) throw new FormatError(file, `${what} must be a tuple, got ${describe(v)}`, at);
  if (v.items.length > 64) throw new FormatError(file, `${what} has ${v.items.length} dimensions`, at);
  return v.items.map((x, i) => int(x, `${what}[${i}]`, file, at));
}

/** Builds the hooks of the state-dict VM; `storages` collects every storage seen by key. */
function stateDictHooks(file: string, baseOffset: number, storages: Map<string, StorageRef>) {
  return {
    file,
    baseOffset,
    allowGlobal: allowedGlobal,
    persistentLoad(pid: PyValue, at: number): PyValue {
      if (!(pid instanceof PyTuple) || pid.items.length !== 5 || pid.items[0] !== 'storage') {
        throw new FormatError(file, `pickle: persistent id ${describe(pid)} is not a torch storage reference`, at);
      }
      const [, cls, key, location, numel] = pid.items;
      if (!(cls instanceof PyGlobal) || cls.module !== 'torch' || !allowedGlobal(cls.module, cls.name)) {
        throw new FormatError(file, `pickle: storage type ${describe(cls!)} is not a torch storage class`, at);
      }
      if (typeof key !== 'string' || !/^[A-Za-z0-9_.-]{1,128}$/.test(key))
        throw new FormatError(file, `pickle: bad storage key ${describe(key!)}`, at);
      if (typeof location !== 'string') throw new FormatError(file, `pickle: bad storage location ${describe(location!)}`, at);
      const ref: StorageRef = {
        kind: 'storage',
        key,
        dtype: STORAGE_DTYPES[cls.name],
        storageType: cls.name,
        location,
        numel: int(numel!, 'storage size', file, at),
      };
      const prev = storages.get(key);
      if (prev) {
        if (prev.dtype !== ref.dtype || prev.numel !== ref.numel)
          throw new FormatError(file, `pickle: storage ${key} is described twice differently`, at);
        return prev;
      }
      storages.set(key, ref);
      return ref;
    },
    reduce(fn: PyGlobal, args: PyTuple, at: number): PyValue {
      const a = args.items;
      if (fn.module === 'collections') {
        const d = new PyDict(true);
        if (a.length === 1 && Array.isArray(a[0])) {
          for (const pair of a[0]) {
            if (!(pair instanceof PyTuple) || pair.items.length !== 2)
              throw new FormatError(file, 'pickle: OrderedDict item is not a pair', at);
            d.entries.set(pair.items[0]!, pair.items[1]!);
          }
        } else if (a.length !== 0) {
          throw new FormatError(file, `pickle: OrderedDict called with ${a.length} arguments`, at);
        }
        return d;
      }
      if (fn.module === 'torch._utils' && (fn.name === '_rebuild_tensor_v2' || fn.name === '_rebuild_tensor')) {
        if (a.length < 4 || a.length > 7) throw new FormatError(file, `pickle: ${fn.name} called with ${a.length} arguments`, at);
        const storage = a[0]!;
        if (!isStorageRef(storage)) throw new FormatError(file, `pickle: ${fn.name} needs a storage, got ${describe(storage)}`, at);
        const t: TensorRef = {
          kind: 'tensor',
          storage,
          offset: int(a[1]!, 'storage offset', file, at),
          shape: intTuple(a[2]!, 'size', file, at),
          stride: intTuple(a[3]!, 'stride', file, at),
          requiresGrad: a[4] === true,
        };
        if (t.shape.length !== t.stride.length)
          throw new FormatError(file, `pickle: size has ${t.shape.length} dims but stride ${t.stride.length}`, at);
        return t;
      }
      if (fn.module === 'torch._utils' && (fn.name === '_rebuild_parameter' || fn.name === '_rebuild_parameter_with_state')) {
        if (a.length < 3 || !isTensorRef(a[0]!)) throw new FormatError(file, `pickle: ${fn.name} needs a tensor`, at);
        return a[0]!;
      }
      throw new FormatError(file, `pickle: calling ${fn.full} is not allowed`, at);
    },
    build(obj: PyValue, state: PyValue, at: number): void {
      // OrderedDict.__reduce__ carries the instance __dict__ (a state dict's _metadata).
      if (obj instanceof PyDict) obj.state = state;
      else throw new FormatError(file, `pickle: BUILD on ${describe(obj)} is not allowed`, at);
    },
  };
}

/** Validates a tensor against its storage and computes the byte span to read. */
export function validateTensor(key: string, t: TensorRef, file: string, at: number): BinTensor {
  const s = t.storage;
  if (s.dtype === undefined)
    throw new FormatError(file, `tensor "${printable(key)}" uses an untyped storage; re-save the state dict with typed tensors`, at);
  const es = BIN_DTYPE_SIZE[s.dtype];
  let numel = 1;
  for (const d of t.shape) {
    numel *= d;
    if (!Number.isSafeInteger(numel))
      throw new FormatError(file, `tensor "${printable(key)}" claims an impossible shape [${t.shape.join(', ')}]`, at);
  }
  const byteLength = numel * es;
  const storageBytes = s.numel * es;
  if (!Number.isSafeInteger(byteLength) || !Number.isSafeInteger(storageBytes))
    throw new FormatError(file, `tensor "${printable(key)}" is too large`, at);
  let contiguous = true;
  let expect = 1;
  for (let i = t.shape.length - 1; i >= 0; i--) {
    if (t.shape[i] !== 1 && t.stride[i] !== expect) contiguous = false;
    expect *= t.shape[i]!;
  }
  let lastElem = t.offset;
  if (numel > 0) {
    for (let i = 0; i < t.shape.length; i++) lastElem += (t.shape[i]! - 1) * t.stride[i]!;
    if (!Number.isSafeInteger(lastElem) || lastElem >= s.numel) {
      throw new FormatError(
        file,
        `tensor "${printable(key)}" [${t.shape.join(', ')}] at offset ${t.offset} with stride (${t.stride.join(', ')}) reaches past its storage of ${s.numel} elements`,
        at,
      );
    }
  }
  if (numel === 0) contiguous = true;
  return {
    key,
    dtype: s.dtype,
    shape: t.shape,
    stride: t.stride,
    offset: t.offset,
    storage: s,
    contiguous,
    byteLength,
    // An empty tensor reads nothing, wherever its (unchecked) offset points.
    spanStart: numel === 0 ? 0 : t.offset * es,
    spanLength: numel === 0 ? 0 : (lastElem - t.offset + 1) * es,
  };
}

/** Result of {@link decodeStateDict}. */
export interface DecodedStateDict {
  tensors: BinTensor[];
  storages: Map<string, StorageRef>;
  /** Top-level keys whose values are not tensors (ignored). */
  skipped: string[];
}

/**
 * Runs the allow-listed VM over `data.pkl` and validates every tensor. A top-level dict of
 * tensors is the state dict; a wrapper `{"state_dict": {...}}` or `{"model": {...}}` is
 * unwrapped.
 */
export function decodeStateDict(pkl: Uint8Array, file: string, baseOffset = 0): DecodedStateDict {
  const storages = new Map<string, StorageRef>();
  let root = unpickle(pkl, stateDictHooks(file, baseOffset, storages));
  if (!(root instanceof PyDict)) throw new FormatError(file, `pickle holds ${describe(root)}, not a state dict`, baseOffset);
  const hasTensor = (d: PyDict) => [...d.entries.values()].some(isTensorRef);
  if (!hasTensor(root)) {
    for (const k of ['state_dict', 'model', 'module']) {
      const inner = root.entries.get(k);
      if (inner instanceof PyDict && hasTensor(inner)) {
        root = inner;
        break;
      }
    }
  }
  const tensors: BinTensor[] = [];
  const skipped: string[] = [];
  for (const [k, v] of root.entries) {
    if (typeof k !== 'string') throw new FormatError(file, `state dict key ${describe(k)} is not a string`, baseOffset);
    if (isTensorRef(v)) tensors.push(validateTensor(k, v, file, baseOffset));
    else skipped.push(k);
  }
  return { tensors, storages, skipped };
}
