/**
 * Text for a human, shared by the CLI, the exporters, prepare and the server so every surface
 * prints it the same way: byte sizes, and names from files with their control characters escaped.
 */

/** Human-readable byte size in binary units: `512 B`, `224.6 KiB`, `5.0 GiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

// C0 controls except tab and newline, DEL, and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS_AND_NEWLINES = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text for a human (terminal, editor) with control characters written as `\u001b`: keys and
 * names come from files, and a raw ESC or CR in one could repaint the screen (a forged green
 * "ok"). Newlines and tabs are kept unless `oneLine`.
 */
export function escapeControls(text: string, oneLine = false): string {
  const re = oneLine ? CONTROLS_AND_NEWLINES : CONTROLS;
  re.lastIndex = 0;
  if (!re.test(text)) return text;
  return text.replace(re, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
