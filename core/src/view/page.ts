/** Dispatch by file type, with a bad file turned into one line of text for the page. */
import { oneLine } from '../errors';
import { buildCheckpointPage, type CheckpointPageOptions } from './checkpoint-page';
import type { GraphIndex } from './onnx-graph';
import { buildOnnxPage, type OnnxPageOptions } from './onnx-page';
import type { ViewerPage } from './types';

/** A page, and for an ONNX file the graph index behind its graph explorer. */
export interface ViewerResult {
  page: ViewerPage;
  graph?: GraphIndex;
}

/**
 * The page for `file`: `.onnx` → the ONNX page, anything else → the checkpoint page. A file
 * that cannot be read gives an error page whose message is one line naming the file and what
 * is wrong (the FormatError text), never a stack trace.
 */
export async function buildViewerPage(file: string, opts: CheckpointPageOptions & OnnxPageOptions = {}): Promise<ViewerResult> {
  try {
    if (file.toLowerCase().endsWith('.onnx')) {
      const { page, graph } = await buildOnnxPage(file, opts);
      return { page, graph };
    }
    return { page: await buildCheckpointPage(file, opts) };
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    const msg = oneLine(err);
    return { page: { kind: 'error', opened: file, message: msg.includes(file) ? msg : `${file}: ${msg}` } };
  }
}
