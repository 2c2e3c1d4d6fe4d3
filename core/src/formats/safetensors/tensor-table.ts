/**
 * The tensors of one safetensors header in columns: per tensor a dtype code, a shape id and
 * its two data offsets in typed arrays, the keys in one array, and a key → row map.
 *
 * Why: the language server keeps the header of every shard a spec names for its whole life,
 * and a checkpoint has tens of thousands of tensors. One {@link TensorInfo} object per tensor
 * was 80 bytes of heap each (1.6 MiB for a 20 000-tensor checkpoint: the server held 3.0×
 * the size of a 20 000-input spec, over its 3× target; 2.5× now), and objects the garbage
 * collector walks on every cold check. Here a tensor costs its key, its map entry and 21 bytes
 * outside the heap.
 *
 * It is a `Map<string, TensorInfo>` to every reader (a subclass whose readers are all
 * overridden; its own Map storage stays empty): a tensor's object is made on its first read
 * and kept, so the same key always gives the same object, as the plain map did. It is
 * read-only (no header was ever changed after parsing; a write throws rather than being
 * lost). Hot callers that need no object ask {@link TensorTable.keyOf} and
 * {@link TensorTable.someDtype} instead.
 */
import { DTYPE_SIZE, type DType } from '../dtype';

/** One tensor of a safetensors file, with its offsets validated against the file. */
export interface TensorInfo {
  key: string;
  dtype: DType;
  shape: number[];
  /** Absolute byte offset in the file = 8 + headerLength + begin. */
  dataOffset: number;
  byteLength: number;
  /** `data_offsets[0]`, relative to the data region. */
  begin: number;
  /** `data_offsets[1]`, relative to the data region. */
  end: number;
}

/** Every dtype, by code (the order of DTYPE_SIZE). */
export const DTYPE_LIST = Object.keys(DTYPE_SIZE) as DType[];
/** A dtype's code in {@link DTYPE_LIST}. */
export const DTYPE_CODE = new Map<string, number>(DTYPE_LIST.map((d, i) => [d, i]));

/** A header's tensors in columns (see the module comment). Rows are in file (offset) order. */
export class TensorTable extends Map<string, TensorInfo> {
  /** Materialized rows, made on first read (most rows never are in the language server). */
  private infos?: (TensorInfo | undefined)[];

  /**
   * The rows `0..keys.length` of the columns, already in (begin, end) order (the parsers sort
   * and check them). `dataStart` is 8 + the header's length; `row` maps each key to its row,
   * once. The fast path builds these itself (header-fast.ts); others use {@link TensorTable.of}.
   */
  constructor(
    private readonly keyList: readonly string[],
    private readonly row: ReadonlyMap<string, number>,
    private readonly dtypeCode: Uint8Array,
    private readonly shapeId: Uint32Array,
    private readonly shapes: readonly number[][],
    private readonly begins: Float64Array,
    private readonly ends: Float64Array,
    private readonly dataStart: number,
    /** Bit `c` set when some row has dtype code `c` (the dtypes present, without a pass over the rows). */
    private readonly dtypeMask: number,
  ) {
    super();
  }

  /**
   * A table of `infos`, which are in file order and unique by key (the general parser's
   * entries, sorted and checked; header-fast.ts builds its table from its own columns).
   */
  static of(infos: readonly TensorInfo[], dataStart: number): TensorTable {
    const n = infos.length;
    const keys = new Array<string>(n);
    const row = new Map<string, number>();
    const dtypes = new Uint8Array(n);
    const shapeIds = new Uint32Array(n);
    const shapes: number[][] = [];
    const ids = new Map<number[], number>();
    const begins = new Float64Array(n);
    const ends = new Float64Array(n);
    let mask = 0;
    let lastShape: number[] | undefined;
    let lastId = 0;
    for (let i = 0; i < n; i++) {
      const t = infos[i]!;
      keys[i] = t.key;
      row.set(t.key, i);
      const code = DTYPE_CODE.get(t.dtype)!;
      dtypes[i] = code;
      mask |= 1 << code;
      // Neighbours mostly share a shape: one map lookup per change of shape.
      if (t.shape !== lastShape) {
        let id = ids.get(t.shape);
        if (id === undefined) ids.set(t.shape, (id = shapes.push(t.shape) - 1));
        lastShape = t.shape;
        lastId = id;
      }
      shapeIds[i] = lastId;
      begins[i] = t.begin;
      ends[i] = t.end;
    }
    return new TensorTable(keys, row, dtypes, shapeIds, shapes, begins, ends, dataStart, mask);
  }

  override get size(): number {
    return this.keyList.length;
  }

  override has(key: string): boolean {
    return this.row.has(key);
  }

  override get(key: string): TensorInfo | undefined {
    const i = this.row.get(key);
    return i === undefined ? undefined : this.at(i);
  }

  /** The table's own string for `key` (equal to it), or undefined when there is no such tensor. */
  keyOf(key: string): string | undefined {
    const i = this.row.get(key);
    return i === undefined ? undefined : this.keyList[i];
  }

  /** Whether some tensor's dtype passes `test` (each dtype present is tested once). */
  someDtype(test: (dtype: DType) => boolean): boolean {
    return DTYPE_LIST.some((d, c) => (this.dtypeMask & (1 << c)) !== 0 && test(d));
  }

  /** Row `i` as its object (made once). */
  private at(i: number): TensorInfo {
    this.infos ??= new Array<TensorInfo | undefined>(this.keyList.length);
    let t = this.infos[i];
    if (t === undefined) {
      const b = this.begins[i]!;
      const e = this.ends[i]!;
      const dtype = DTYPE_LIST[this.dtypeCode[i]!]!;
      t = {
        key: this.keyList[i]!,
        dtype,
        shape: this.shapes[this.shapeId[i]!]!,
        dataOffset: this.dataStart + b,
        byteLength: e - b,
        begin: b,
        end: e,
      };
      this.infos[i] = t;
    }
    return t;
  }

  override keys(): MapIterator<string> {
    return this.row.keys();
  }

  override values(): MapIterator<TensorInfo> {
    return this.rows((i) => this.at(i));
  }

  override entries(): MapIterator<[string, TensorInfo]> {
    return this.rows((i) => [this.keyList[i]!, this.at(i)]);
  }

  override [Symbol.iterator](): MapIterator<[string, TensorInfo]> {
    return this.entries();
  }

  override forEach(fn: (value: TensorInfo, key: string, map: Map<string, TensorInfo>) => void, thisArg?: unknown): void {
    for (let i = 0; i < this.keyList.length; i++) fn.call(thisArg, this.at(i), this.keyList[i]!, this);
  }

  override set(): this {
    throw new TypeError('a safetensors header is read-only');
  }

  override delete(): boolean {
    throw new TypeError('a safetensors header is read-only');
  }

  override clear(): void {
    throw new TypeError('a safetensors header is read-only');
  }

  /** The rows in order through `fn`, as a Map's iterators give them. */
  private *rows<T>(fn: (i: number) => T): Generator<T, undefined> {
    for (let i = 0; i < this.keyList.length; i++) yield fn(i);
    return undefined;
  }
}

/**
 * The string a header's tensor map holds for `key` (equal to it), or undefined: from the columns
 * of a {@link TensorTable} without making the tensor's object, else from the map's entry.
 */
export function storedKey(tensors: ReadonlyMap<string, TensorInfo>, key: string): string | undefined {
  return tensors instanceof TensorTable ? tensors.keyOf(key) : tensors.get(key)?.key;
}

/** Whether some tensor of a header's map has a dtype passing `test` (a {@link TensorTable} answers from its dtype column). */
export function hasDtype(tensors: ReadonlyMap<string, TensorInfo>, test: (dtype: DType) => boolean): boolean {
  if (tensors instanceof TensorTable) return tensors.someDtype(test);
  for (const t of tensors.values()) if (test(t.dtype)) return true;
  return false;
}
