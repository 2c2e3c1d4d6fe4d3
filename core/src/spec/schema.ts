/**
 * The zod schema of weight_spec.json across QEfficient's versions. One lenient schema reads
 * them all — v1 (`fqn/kind/shape/dtype`, `tied_weights`, string `checkpoint_files`), v3
 * (`weights_root`/`checkpoint_base_dir`), v4+ (`files` of `{path, format}`), newer optional
 * `role`/`weight_input`/`metadata`, v6 `quantization` — with loose objects so unknown fields
 * survive. Normalization to {@link WeightSpec} happens afterwards (see parse.ts).
 */
import { z } from 'zod';

const nonNegInt = z.int({ error: 'expected a non-negative integer' }).min(0, { error: 'expected a non-negative integer' });
const posInt = z.int({ error: 'expected a positive integer' }).min(1, { error: 'expected a positive integer' });
const nonEmpty = (what: string) => z.string({ error: `expected ${what} (a string)` }).min(1, { error: `${what} must not be empty` });

/** `files[]` / `checkpoint_files[]`: a v1 path string or a v4+ `{path, format}` object. */
export const FileEntrySchema = z.preprocess(
  (v) => (typeof v === 'string' ? { path: v } : v),
  z.looseObject(
    {
      path: nonEmpty('a file path'),
      format: nonEmpty('a file format').optional(),
    },
    { error: 'expected a file path or an object {"path", "format"}' },
  ),
);

/**
 * `location`: which file and which tensor key. `file` is an index into `files`, or (as
 * QEfficient's `WeightSpecLocation.file: Union[int, str]` allows) the file's path.
 */
export const LocationSchema = z.looseObject(
  {
    file: z.union([nonNegInt, nonEmpty('a file path')], {
      error: 'expected a non-negative integer (an index into "files") or a file path',
    }),
    key: nonEmpty('a tensor key'),
  },
  { error: 'expected an object {"file", "key"}' },
);

/** v6 per-input quantization. */
export const QuantizationSchema = z.looseObject(
  {
    format: nonEmpty('a quantization format'),
    block_size: posInt.optional(),
    axis: z.int({ error: 'expected an integer axis' }).optional(),
    layout: nonEmpty('a layout name').optional(),
    dequantized_axis_size: posInt.optional(),
    logical_dtype: nonEmpty('a dtype name').optional(),
  },
  { error: 'expected an object {"format", ...}' },
);

/** One `inputs[]` entry of any version. */
export const InputSchema = z
  .looseObject(
    {
      name: nonEmpty('an input name').optional(),
      // null (or absent): QEfficient's load_weight_spec skips the input (old buffer-only entries)
      location: LocationSchema.nullable().optional(),
      role: nonEmpty('a role').optional(),
      weight_input: nonEmpty('an input name').optional(),
      metadata: z.record(z.string(), z.unknown(), { error: 'expected an object' }).optional(),
      quantization: QuantizationSchema.optional(),
      fqn: nonEmpty('a parameter path').optional(),
      kind: z.string({ error: 'expected a string' }).optional(),
      shape: z.array(nonNegInt, { error: 'expected an array of dimensions' }).optional(),
      dtype: nonEmpty('a dtype name').optional(),
      file: nonNegInt.optional(),
    },
    { error: 'expected an input object {"name", "location"}' },
  )
  .superRefine((v, ctx) => {
    if (v.name === undefined && v.fqn === undefined) {
      ctx.addIssue({ code: 'custom', path: ['name'], message: 'missing required field "name"' });
    }
  });

const TiedWeightsSchema = z.union([z.record(z.string(), z.string()), z.array(z.tuple([z.string(), z.string()]))], {
  error: 'expected an object {"tied": "target"} or a list of [tied, target] pairs',
});

/** The whole document. */
export const SpecSchema = z
  .looseObject(
    {
      // absent: QEfficient's load_weight_spec reads WEIGHT_SPEC_VERSION (5)
      version: z.int({ error: 'expected an integer' }).min(1, { error: 'version must be ≥ 1' }).optional(),
      files: z.array(FileEntrySchema, { error: 'expected an array of files' }).optional(),
      checkpoint_files: z.array(FileEntrySchema, { error: 'expected an array of files' }).optional(),
      weights_root: nonEmpty('a directory').optional(),
      checkpoint_base_dir: nonEmpty('a directory').optional(),
      inputs: z.array(InputSchema, { error: 'expected an array of inputs' }),
      model_id: z.string({ error: 'expected a string' }).optional(),
      model_name: z.string({ error: 'expected a string' }).optional(),
      tied_weights: TiedWeightsSchema.optional(),
    },
    { error: 'a weight spec must be a JSON object' },
  )
  .superRefine((v, ctx) => {
    if (v.files === undefined && v.checkpoint_files === undefined) {
      ctx.addIssue({ code: 'custom', path: ['files'], message: 'missing required field "files"' });
    }
  });

/** The raw (validated, not yet normalized) document. */
export type RawSpec = z.infer<typeof SpecSchema>;
/** One raw `inputs[]` entry. */
export type RawInput = z.infer<typeof InputSchema>;
