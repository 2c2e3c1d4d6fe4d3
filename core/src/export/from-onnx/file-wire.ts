/**
 * The converter's view of a (possibly huge) ONNX file: lists of fields by offset, built on
 * the ONNX module's validated positional reader, so payloads such as `raw_data` are never
 * read; only tags, lengths and the small fields asked for are.
 */
import type { WireField } from '../../formats/onnx/wire-model';
import { FileReader } from '../../formats/onnx/wire-reader';

/** One field of a message in the file (the same shape as the in-memory view's fields). */
export type FileField = WireField;

/** A read-only ONNX file, addressed by fields. */
export class FileWire {
  private constructor(private readonly r: FileReader) {}

  /** Opens `file`; the caller must {@link close} it. A FormatError when it cannot be read. */
  static open(file: string): FileWire {
    return new FileWire(FileReader.open(file));
  }

  get file(): string {
    return this.r.file;
  }

  get size(): number {
    return this.r.size;
  }

  close(): void {
    this.r.close();
  }

  /** Reads a varint at `pos` inside `[pos, end)`: [value, position after it]. */
  varint(pos: number, end = this.r.size): [number, number] {
    const v = this.r.varint(pos, end, 'packed field', 0, 'value');
    return [v, this.r.next];
  }

  /** The fields of the message occupying `[start, end)` (`msg` names it in errors). */
  fields(start: number, end: number, msg = 'message'): FileField[] {
    const out: FileField[] = [];
    this.r.each(start, end, msg, (h) =>
      out.push({ field: h.field, wire: h.wire, start: h.start, end: h.vEnd, vStart: h.vStart, vEnd: h.vEnd, int: h.int }),
    );
    return out;
  }

  /** Reads `[start, end)` (small fields: names, shapes, attributes, kept nodes). */
  bytes(start: number, end: number): Uint8Array {
    return this.r.bytes(start, end);
  }

  /** The UTF-8 string value of a length-delimited field. */
  string(f: FileField): string {
    return this.r.string(f.vStart, f.vEnd);
  }
}
