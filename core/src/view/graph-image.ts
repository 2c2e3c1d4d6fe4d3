/**
 * Saving the graph explorer's pictures: the webview posts an SVG document (graph-svg.ts) or the
 * canvas as a PNG data URL; the extension asks where (VS Code's save dialog) and writes it here,
 * atomically (temp + rename: a failed write leaves no half file and the old one untouched). An
 * existing file is replaced only with `replace` (the dialog has asked), and what is written is
 * checked to be what its name says, so a webview cannot make the extension write other bytes.
 */
import fs from 'node:fs';
import { PipelineError } from '../errors';
import { atomicWriteFile } from '../paths/atomic';
import { specialKind } from '../paths/file-kind';

/** The formats the explorer exports. */
export type GraphImageFormat = 'svg' | 'png';

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PNG_URL = 'data:image/png;base64,';

/** The bytes of `data` as a file of `format`, or the one-line reason they are not one. */
export function graphImageBytes(format: GraphImageFormat, data: string): Buffer {
  if (format === 'svg') {
    if (!/^<\?xml [^>]*\?>\s*<svg\s/.test(data) || !/<\/svg>\s*$/.test(data))
      throw new PipelineError('the SVG export is not an SVG document');
    return Buffer.from(data, 'utf8');
  }
  const bytes = data.startsWith(PNG_URL) ? Buffer.from(data.slice(PNG_URL.length), 'base64') : Buffer.alloc(0);
  if (bytes.length < PNG_MAGIC.length || !bytes.subarray(0, PNG_MAGIC.length).equals(PNG_MAGIC))
    throw new PipelineError('the PNG export is not a PNG image (the canvas gave no picture)');
  return bytes;
}

/**
 * Writes the picture to `out`: refused when `out` exists and `replace` is not set, or when it is
 * not a regular file (a directory, a FIFO, a device). Returns the bytes written.
 */
export async function saveGraphImage(
  out: string,
  format: GraphImageFormat,
  data: string,
  opts: { replace?: boolean } = {},
): Promise<number> {
  const bytes = graphImageBytes(format, data);
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(out);
  } catch {
    // Not there: a new file.
  }
  if (st) {
    if (!opts.replace) throw new PipelineError(`${out}: exists; choose another name (nothing was written)`);
    // A symbolic link is replaced itself (rename), never written through.
    const kind = st.isSymbolicLink() ? undefined : specialKind(st);
    if (kind) throw new PipelineError(`${out}: is ${kind}, not a file to replace (nothing was written)`);
  }
  await atomicWriteFile(out, bytes);
  return bytes.length;
}
