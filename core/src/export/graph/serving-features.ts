/**
 * The serving-feature metadata keys and inputs now live with the tool's other artifacts
 * (artifacts/graph-metadata.ts); the exporter's modules import them from here until the
 * export/graph move (issue #29 step 1) points them there.
 */
export { SAMPLER_INPUTS, SERVING_METADATA, cclFromMetadata } from '../../artifacts/graph-metadata';
