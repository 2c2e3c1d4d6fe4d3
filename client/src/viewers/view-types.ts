/**
 * The viewers' custom-editor view types (package.json `contributes.customEditors`), in a file of
 * their own so that the provider, which opens a shard in the safetensors viewer, and the
 * registration in index.ts both read them without importing each other.
 */

/** The safetensors viewer (default editor of *.safetensors). */
export const SAFETENSORS_VIEW_TYPE = 'weightSpec.safetensorsViewer';
/** The ONNX viewer (default editor of *.onnx). */
export const ONNX_VIEW_TYPE = 'weightSpec.onnxViewer';
