/**
 * A guard shared by every JSON reader (safetensors headers, index files, specs): the
 * character offset where `[`/`{` nesting outside strings first exceeds `max`, or -1.
 * jsonc-parser and the offset walks recurse once per level, so a hostile file of a few
 * hundred KB of brackets would otherwise exhaust the stack (a fuzz finding).
 */
export function nestingBeyond(text: string, max: number): number {
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inStr) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inStr = false;
    } else if (c === 0x22) inStr = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return -1;
}
