/** Types of lsp-edit-soak.bench.mjs (imported by the CI soak test). */
export interface EditSoakResult {
  rssAt10: number;
  rssEnd: number;
  heapAt10: number;
  heapEnd: number;
  specBytes: number;
  ms: number;
}
export function runEditSoak(o?: {
  inputs?: number;
  edits?: number;
  log?: (line: string) => void;
  snapshot?: string;
}): Promise<EditSoakResult>;
