/**
 * Names what a file that failed to parse as ONNX most likely is, so the error says "this is a
 * JSON file" rather than only "invalid wire type 3".
 */

/** A short description of a non-ONNX file's content, or undefined when nothing is recognized. */
export function sniffNonOnnx(head: Uint8Array, fileSize: number): string | undefined {
  if (fileSize === 0) return 'the file is empty';
  let i = 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x0a || head[i] === 0x0d || head[i] === 0x09)) i++;
  if (head[i] === 0xef && head[i + 1] === 0xbb && head[i + 2] === 0xbf) i += 3;
  if (head[i] === 0x7b || head[i] === 0x5b) return 'looks like a JSON file, not an ONNX protobuf';
  if (head.length >= 9 && head[8] === 0x7b) {
    const n = Number(new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true));
    if (n > 0 && n + 8 <= fileSize) return 'looks like a safetensors file, not an ONNX protobuf';
  }
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    return 'looks like a zip archive (a torch .bin/.pt?), not an ONNX protobuf';
  }
  if (head[0] === 0x80 && head[1] !== undefined && head[1] <= 5) return 'looks like a Python pickle, not an ONNX protobuf';
  return undefined;
}
