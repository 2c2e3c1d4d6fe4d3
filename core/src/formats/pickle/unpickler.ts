/**
 * A pickle virtual machine that executes nothing. It implements the opcodes a PyTorch state
 * dict uses (protocols 2–5) and builds inert {@link PyValue}s. Globals are names checked
 * against the caller's allow-list when they are *loaded*; calling one (REDUCE) goes to the
 * caller's `reduce`, which builds data, never code. Opcodes that instantiate arbitrary
 * classes (INST, OBJ, NEWOBJ, EXT*) are refused. Stack, memo and lengths are bounded so a
 * hostile pickle ends in a FormatError, not in unbounded memory or time.
 */
import { FormatError } from '../../errors';
import { PyDict, PyGlobal, PyTuple, describe, type PyValue } from './values';

/** What the VM delegates: the allow-list, REDUCE/BUILD, and persistent ids. */
export interface UnpickleHooks {
  /** File named in errors. */
  file: string;
  /** Where `data` starts inside `file` (errors report absolute bytes). */
  baseOffset?: number;
  /** True when `module.name` may be loaded. */
  allowGlobal(module: string, name: string): boolean;
  /** Builds the value of `fn(*args)` for an allowed global, or throws a FormatError. */
  reduce(fn: PyGlobal, args: PyTuple, at: number): PyValue;
  /** Resolves a BINPERSID id. */
  persistentLoad(pid: PyValue, at: number): PyValue;
  /** Applies BUILD state; default: refuse except on dicts. */
  build?(obj: PyValue, state: PyValue, at: number): void;
}

/** Resource limits (defaults suit any real state dict). */
export interface UnpickleLimits {
  maxStack: number;
  maxMarks: number;
  maxMemo: number;
  /** Longest LONG4 integer, in bytes. */
  maxLongBytes: number;
}

const DEFAULT_LIMITS: UnpickleLimits = { maxStack: 1 << 22, maxMarks: 1 << 16, maxMemo: 1 << 22, maxLongBytes: 64 };

/** Decodes a pickle (protocol ≤ 5) into an inert value. */
export function unpickle(data: Uint8Array, hooks: UnpickleHooks, limits: Partial<UnpickleLimits> = {}): PyValue {
  const lim = { ...DEFAULT_LIMITS, ...limits };
  const base = hooks.baseOffset ?? 0;
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const stack: PyValue[] = [];
  const marks: number[] = [];
  const memo = new Map<number, PyValue>();
  let pos = 0;
  let op = 0;
  let opAt = 0;

  const fail = (detail: string, at = opAt): never => {
    throw new FormatError(hooks.file, `pickle: ${detail}`, base + at);
  };
  const need = (n: number): number => {
    if (n < 0 || pos + n > data.length) fail(`opcode 0x${op.toString(16)} needs ${n} bytes but the pickle ends`);
    const at = pos;
    pos += n;
    return at;
  };
  /** An 8-byte length, refused when it claims more than the pickle still holds. */
  const len8 = (): number => {
    const n = dv.getBigUint64(need(8), true);
    if (n > BigInt(data.length - pos)) fail(`opcode 0x${op.toString(16)} needs ${n} bytes but the pickle ends`);
    return Number(n);
  };
  const push = (v: PyValue): void => {
    if (stack.length >= lim.maxStack) fail(`stack exceeds ${lim.maxStack} items`);
    stack.push(v);
  };
  const pop = (): PyValue => {
    if (stack.length === 0 || (marks.length > 0 && stack.length <= marks[marks.length - 1]!)) fail('stack underflow');
    return stack.pop() as PyValue;
  };
  const top = (): PyValue => {
    if (stack.length === 0 || (marks.length > 0 && stack.length <= marks[marks.length - 1]!)) fail('stack underflow');
    return stack[stack.length - 1] as PyValue;
  };
  const popMark = (): PyValue[] => {
    const m = marks.pop();
    if (m === undefined) fail('MARK missing');
    return stack.splice(m!);
  };
  const str = (at: number, n: number): string => {
    try {
      return utf8.decode(data.subarray(at, at + n));
    } catch {
      return fail('string is not valid UTF-8', at);
    }
  };
  const line = (): string => {
    const end = data.indexOf(0x0a, pos);
    if (end < 0 || end - pos > 256) fail('GLOBAL name line missing or too long');
    const s = str(pos, end - pos);
    pos = end + 1;
    return s;
  };
  const memoPut = (idx: number): void => {
    if (memo.size >= lim.maxMemo && !memo.has(idx)) fail(`memo exceeds ${lim.maxMemo} entries`);
    memo.set(idx, top());
  };
  const memoGet = (idx: number): void => {
    if (!memo.has(idx)) fail(`memo entry ${idx} is not defined`);
    push(memo.get(idx)!);
  };
  const loadGlobal = (module: string, name: string): void => {
    if (!hooks.allowGlobal(module, name)) {
      fail(
        `refusing global ${JSON.stringify(`${module}.${name}`)}: only the globals of a PyTorch state dict are allowed (nothing is executed)`,
      );
    }
    push(new PyGlobal(module, name));
  };
  const signedLE = (at: number, n: number): number | bigint => {
    if (n === 0) return 0;
    let v = 0n;
    for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(data[at + i]!);
    if (data[at + n - 1]! & 0x80) v -= 1n << BigInt(8 * n);
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  };
  const setItems = (d: PyValue, items: PyValue[]): void => {
    if (!(d instanceof PyDict)) fail(`SETITEMS on ${describe(d)}`);
    if (items.length % 2) fail('SETITEMS with an odd number of items');
    for (let i = 0; i < items.length; i += 2) (d as PyDict).entries.set(items[i]!, items[i + 1]!);
  };
  const appendItems = (l: PyValue, items: PyValue[]): void => {
    if (!Array.isArray(l)) fail(`APPENDS on ${describe(l)}`);
    for (const it of items) (l as PyValue[]).push(it);
  };

  while (pos < data.length) {
    opAt = pos;
    op = data[pos++]!;
    switch (op) {
      case 0x80: {
        // PROTO
        const v = data[need(1)]!;
        if (v > 5) fail(`unsupported pickle protocol ${v}`);
        break;
      }
      case 0x95: {
        // FRAME: a length hint; must not claim more than remains
        const n = dv.getBigUint64(need(8), true);
        if (n > BigInt(data.length - pos)) fail('FRAME longer than the pickle');
        break;
      }
      case 0x2e: {
        // STOP
        if (stack.length !== 1 || marks.length) fail(`STOP with ${stack.length} stack items`);
        return stack[0] as PyValue;
      }
      case 0x28: // MARK
        if (marks.length >= lim.maxMarks) fail(`more than ${lim.maxMarks} nested MARKs`);
        marks.push(stack.length);
        break;
      case 0x30:
        pop();
        break; // POP
      case 0x31:
        popMark();
        break; // POP_MARK
      case 0x32:
        push(top());
        break; // DUP
      case 0x4e:
        push(null);
        break; // NONE
      case 0x88:
        push(true);
        break; // NEWTRUE
      case 0x89:
        push(false);
        break; // NEWFALSE
      case 0x4a:
        push(dv.getInt32(need(4), true));
        break; // BININT
      case 0x4b:
        push(data[need(1)]!);
        break; // BININT1
      case 0x4d:
        push(dv.getUint16(need(2), true));
        break; // BININT2
      case 0x8a: {
        const n = data[need(1)]!;
        push(signedLE(need(n), n));
        break;
      } // LONG1
      case 0x8b: {
        // LONG4
        const n = dv.getInt32(need(4), true);
        if (n < 0 || n > lim.maxLongBytes) fail(`LONG4 of ${n} bytes refused`);
        push(signedLE(need(n), n));
        break;
      }
      case 0x47:
        push(dv.getFloat64(need(8), false));
        break; // BINFLOAT (big-endian)
      case 0x58: {
        const n = dv.getUint32(need(4), true);
        push(str(need(n), n));
        break;
      } // BINUNICODE
      case 0x8c: {
        const n = data[need(1)]!;
        push(str(need(n), n));
        break;
      } // SHORT_BINUNICODE
      case 0x8d: {
        // BINUNICODE8
        const n = len8();
        push(str(need(n), n));
        break;
      }
      case 0x43: {
        const n = data[need(1)]!;
        push(data.slice(need(n), pos));
        break;
      } // SHORT_BINBYTES
      case 0x42: {
        const n = dv.getUint32(need(4), true);
        push(data.slice(need(n), pos));
        break;
      } // BINBYTES
      case 0x8e: {
        // BINBYTES8
        const n = len8();
        push(data.slice(need(n), pos));
        break;
      }
      case 0x29:
        push(new PyTuple([]));
        break; // EMPTY_TUPLE
      case 0x74:
        push(new PyTuple(popMark()));
        break; // TUPLE
      case 0x85: {
        const a = pop();
        push(new PyTuple([a]));
        break;
      } // TUPLE1
      case 0x86: {
        const b = pop();
        const a = pop();
        push(new PyTuple([a, b]));
        break;
      } // TUPLE2
      case 0x87: {
        const c = pop();
        const b = pop();
        const a = pop();
        push(new PyTuple([a, b, c]));
        break;
      } // TUPLE3
      case 0x5d:
        push([]);
        break; // EMPTY_LIST
      case 0x6c:
        push(popMark());
        break; // LIST
      case 0x61: {
        const v = pop();
        appendItems(top(), [v]);
        break;
      } // APPEND
      case 0x65: {
        const items = popMark();
        appendItems(top(), items);
        break;
      } // APPENDS
      case 0x7d:
        push(new PyDict(false));
        break; // EMPTY_DICT
      case 0x64: {
        const d = new PyDict(false);
        setItems(d, popMark());
        push(d);
        break;
      } // DICT
      case 0x73: {
        const v = pop();
        const k = pop();
        setItems(top(), [k, v]);
        break;
      } // SETITEM
      case 0x75: {
        const items = popMark();
        setItems(top(), items);
        break;
      } // SETITEMS
      case 0x71:
        memoPut(data[need(1)]!);
        break; // BINPUT
      case 0x72:
        memoPut(dv.getUint32(need(4), true));
        break; // LONG_BINPUT
      case 0x94:
        memoPut(memo.size);
        break; // MEMOIZE
      case 0x68:
        memoGet(data[need(1)]!);
        break; // BINGET
      case 0x6a:
        memoGet(dv.getUint32(need(4), true));
        break; // LONG_BINGET
      case 0x63: {
        const m = line();
        const n = line();
        loadGlobal(m, n);
        break;
      } // GLOBAL
      case 0x93: {
        // STACK_GLOBAL
        const n = pop();
        const m = pop();
        if (typeof m !== 'string' || typeof n !== 'string') fail('STACK_GLOBAL needs two strings');
        loadGlobal(m as string, n as string);
        break;
      }
      case 0x51: {
        const pid = pop();
        push(hooks.persistentLoad(pid, base + opAt));
        break;
      } // BINPERSID
      case 0x52: {
        // REDUCE
        const args = pop();
        const fn = pop();
        if (!(fn instanceof PyGlobal)) fail(`REDUCE calls ${describe(fn)}, not an allowed global`);
        if (!(args instanceof PyTuple)) fail(`REDUCE arguments are ${describe(args)}, not a tuple`);
        push(hooks.reduce(fn as PyGlobal, args as PyTuple, base + opAt));
        break;
      }
      case 0x62: {
        // BUILD
        const state = pop();
        const obj = top();
        if (hooks.build) hooks.build(obj, state, base + opAt);
        else if (obj instanceof PyDict) obj.state = state;
        else fail(`BUILD on ${describe(obj)}`);
        break;
      }
      case 0x69:
      case 0x6f:
      case 0x81:
      case 0x92: // INST, OBJ, NEWOBJ, NEWOBJ_EX
        fail(`opcode 0x${op.toString(16)} (object construction) is refused`);
        break;
      case 0x82:
      case 0x83:
      case 0x84: // EXT1/2/4
        fail('extension-registry opcodes are refused');
        break;
      default:
        fail(`unsupported opcode 0x${op.toString(16)}`);
    }
  }
  return fail('pickle ends without STOP', pos);
}
