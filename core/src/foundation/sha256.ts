/**
 * sha256 as lowercase hex: the compile fingerprint's hash. Foundation: imports nothing of ours.
 */
import { createHash } from 'node:crypto';

/** sha256 hex of bytes or text. */
export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}
