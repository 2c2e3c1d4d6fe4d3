/**
 * Small text formatting shared by the CLI, the exporters, prepare and the server, so every
 * surface prints sizes the same way.
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
