/**
 * The values the allow-listed unpickler can produce. Nothing here is executable: a global
 * is a name, a storage is a reference to a zip entry, a tensor is metadata over a storage.
 */
/** Element types a torch storage class can name (a subset of the project's `DType`). */
export type BinDType = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

/** A `module.name` reference that passed the allow-list (never resolved to code). */
export class PyGlobal {
  constructor(
    readonly module: string,
    readonly name: string,
  ) {}
  /** `module.name`. */
  get full(): string {
    return `${this.module}.${this.name}`;
  }
}

/** A Python tuple. */
export class PyTuple {
  constructor(readonly items: PyValue[]) {}
}

/** A Python dict or OrderedDict (insertion order kept). Keys are compared by JS identity/value. */
export class PyDict {
  readonly entries = new Map<PyValue, PyValue>();
  /** State applied by BUILD (e.g. a state dict's `_metadata`), kept but unused. */
  state?: PyValue;
  constructor(readonly ordered: boolean) {}
}

/** A persistent-id storage reference: `('storage', torch.FloatStorage, key, location, numel)`. */
export interface StorageRef {
  readonly kind: 'storage';
  /** Name of the zip entry under `<archive>/data/`. */
  readonly key: string;
  /** Element type, from the storage class. `undefined` for `UntypedStorage` (bytes). */
  readonly dtype: BinDType | undefined;
  /** Storage class name, e.g. `FloatStorage`. */
  readonly storageType: string;
  /** Device at save time (`cpu`, `cuda:0`); informative only. */
  readonly location: string;
  /** Number of elements (bytes for untyped storages). */
  readonly numel: number;
}

/** `_rebuild_tensor_v2(storage, offset, size, stride, …)`, not yet validated against the storage. */
export interface TensorRef {
  readonly kind: 'tensor';
  readonly storage: StorageRef;
  /** Offset into the storage, in elements. */
  readonly offset: number;
  readonly shape: number[];
  readonly stride: number[];
  readonly requiresGrad: boolean;
}

/** Any value the unpickler can build. Lists are JS arrays. */
export type PyValue =
  null | boolean | number | bigint | string | Uint8Array | PyValue[] | PyTuple | PyDict | PyGlobal | StorageRef | TensorRef;

/** Short, non-recursive description of a value for error messages. */
export function describe(v: PyValue): string {
  if (v === null) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number' || typeof v === 'bigint') return `int ${v}`;
  if (typeof v === 'string') return `str ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (v instanceof Uint8Array) return `bytes[${v.length}]`;
  if (Array.isArray(v)) return `list[${v.length}]`;
  if (v instanceof PyTuple) return `tuple[${v.items.length}]`;
  if (v instanceof PyDict) return `dict[${v.entries.size}]`;
  if (v instanceof PyGlobal) return `global ${v.full}`;
  return v.kind === 'storage' ? `storage ${v.key}` : `tensor [${v.shape.join(', ')}]`;
}

/** True for a value made by `_rebuild_tensor_v2`. */
export function isTensorRef(v: PyValue): v is TensorRef {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'kind' in v && v.kind === 'tensor';
}

/** True for a persistent-id storage reference. */
export function isStorageRef(v: PyValue): v is StorageRef {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'kind' in v && v.kind === 'storage';
}
