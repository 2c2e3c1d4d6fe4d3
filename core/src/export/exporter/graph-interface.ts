/**
 * The graph-interface descriptor, for the exporter's side (decoder, blocks, families): it lives
 * in `artifacts/graph-interface.ts` (the format of the tool's own graphs, read by run, check,
 * compile and the server without reaching into export).
 */
export * from '../../artifacts/graph-interface';
