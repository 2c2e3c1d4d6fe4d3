// What a .vsix may hold (the allow-list of .vscodeignore, as vsce lays it out) and a small
// reader of a zip's central directory to list it.
import fs from 'node:fs';

/** Every file the package must hold, and nothing else. */
export const VSIX_FILES = [
  '[Content_Types].xml',
  'extension.vsixmanifest',
  'extension/LICENSE.txt',
  'extension/readme.md',
  'extension/changelog.md',
  'extension/media/activity-bar.svg',
  'extension/media/icon.png',
  'extension/media/walkthrough/compile.md',
  'extension/media/walkthrough/export.md',
  'extension/media/walkthrough/model.md',
  'extension/media/walkthrough/prepare.md',
  'extension/media/walkthrough/run.md',
  'extension/dist/cli.js',
  'extension/dist/extension.js',
  'extension/dist/prepare-worker.js',
  'extension/dist/server.js',
  'extension/dist/viewer.js',
  'extension/dist/weight-spec.schema.json',
  'extension/package.json',
  'extension/syntaxes/language-configuration.json',
  'extension/syntaxes/weight-spec.tmLanguage.json',
];
/**
 * vsce's arguments, as `npm run package` runs them (plus `--out <file>`): the user-facing
 * README is client/README.md (the repository's README.md is the developers'), and the manifest
 * carries its repository, so no `--allow-missing-repository`-style escape is needed.
 */
export const VSCE_PACKAGE_ARGS = ['package', '--no-dependencies', '--readme-path', 'client/README.md'];
/** The .vsix must stay below this (no onnxruntime-node inside). */
export const VSIX_MAX_BYTES = 15 * 1024 * 1024;

/** Entry names of a zip file (central directory; no ZIP64 needed for a package this small). */
export function zipEntries(file) {
  const b = fs.readFileSync(file);
  let eocd = -1;
  for (let i = b.length - 22; i >= Math.max(0, b.length - 22 - 65535); i--) {
    if (b.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error(`${file}: no zip end-of-central-directory record`);
  const count = b.readUInt16LE(eocd + 10);
  let p = b.readUInt32LE(eocd + 16);
  const names = [];
  for (let i = 0; i < count; i++) {
    if (b.readUInt32LE(p) !== 0x02014b50) throw new Error(`${file}: bad central directory entry at byte ${p}`);
    const n = b.readUInt16LE(p + 28);
    const extra = b.readUInt16LE(p + 30);
    const comment = b.readUInt16LE(p + 32);
    names.push(b.toString('utf8', p + 46, p + 46 + n));
    p += 46 + n + extra + comment;
  }
  return names.sort();
}

/** Throws unless `vsix` holds exactly VSIX_FILES and is small enough. */
export async function checkVsix(vsix) {
  const bytes = fs.statSync(vsix).size;
  if (bytes >= VSIX_MAX_BYTES) throw new Error(`${vsix} is ${bytes} bytes (limit ${VSIX_MAX_BYTES})`);
  const files = zipEntries(vsix);
  const extra = files.filter((f) => !VSIX_FILES.includes(f));
  const missing = VSIX_FILES.filter((f) => !files.includes(f));
  if (extra.length || missing.length) throw new Error(`${vsix}: unexpected ${JSON.stringify(extra)}, missing ${JSON.stringify(missing)}`);
  return { bytes, files };
}
