/** Types of sparse-checkpoint.mjs. */
export interface TensorDecl {
  key: string;
  dtype: string;
  shape: number[];
}
export const QWEN3_30B: {
  layers: number;
  experts: number;
  hidden: number;
  moeInter: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
};
export function qwen3MoeTensors(o?: Partial<typeof QWEN3_30B>): TensorDecl[];
export function writeSparseCheckpoint(dir: string, tensors: TensorDecl[], shards?: number): { files: string[]; totalBytes: number };
