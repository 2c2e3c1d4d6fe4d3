/**
 * The files an ONNX page links to: the export's spec beside the graph and a checkpoint to open
 * in the safetensors viewer, the prepared one the embedded spec points at, else (before
 * Prepare) the source checkpoint export-report.json records. Only files that exist are linked;
 * the extension opens these paths itself, the webview only names which link was clicked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readExportReport } from '../artifacts/export-report';
import type { OnnxPage } from './types';

const isFile = (f: string) => {
  try {
    return fs.statSync(f).isFile();
  } catch {
    return false;
  }
};

/** A `.safetensors` file of `dir` (the first by name), which opens the whole checkpoint. */
function shardOf(dir: string): string | undefined {
  try {
    const name = fs
      .readdirSync(dir)
      .filter((n) => n.endsWith('.safetensors'))
      .sort()[0];
    return name ? path.join(dir, name) : undefined;
  } catch {
    return undefined;
  }
}

/** Links of the ONNX file `onnx` whose embedded spec lists `specFiles` (paths relative to its folder). */
export function onnxLinks(onnx: string, specFiles: string[]): NonNullable<OnnxPage['links']> {
  const dir = path.dirname(onnx);
  const links: NonNullable<OnnxPage['links']> = {};
  const spec = path.join(dir, 'weight_spec.json');
  if (isFile(spec)) links.spec = spec;
  const prepared = specFiles.map((f) => path.resolve(dir, f)).find(isFile);
  if (prepared) {
    links.checkpoint = prepared;
    links.checkpointIs = 'prepared';
  } else {
    const src = readExportReport(dir)?.source?.checkpoint;
    const file = src ? (isFile(src) ? src : shardOf(src)) : undefined;
    if (file) {
      links.checkpoint = file;
      links.checkpointIs = 'source';
    }
  }
  return links;
}
