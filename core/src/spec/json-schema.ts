/**
 * weight_spec.json as a JSON Schema (draft-07), generated from the zod schema that the parser
 * uses (schema.ts), so that editors without the language server validate the same document
 * shape. The build writes it to dist/weight-spec.schema.json; package.json contributes it
 * through `jsonValidation`.
 *
 * zod's generator sees the schema's structure; three rules live in code it cannot translate,
 * and are added here next to the schema they belong to: a `files[]` entry may be a bare path
 * string (the `FileEntrySchema` preprocess), an input needs `name` or a v1 `fqn`, and a spec
 * needs `files` or v1 `checkpoint_files` (the two superRefines).
 */
import { z } from 'zod';
import { FileEntrySchema, InputSchema, SpecSchema } from './schema';

type Json = Record<string, unknown>;

/** The JSON Schema of a weight spec. */
export function specJsonSchema(): Json {
  const schema = z.toJSONSchema(SpecSchema, {
    target: 'draft-07',
    io: 'input',
    // Transforms and refinements have no JSON Schema form: keep their structure, patch below.
    unrepresentable: 'any',
    override: (ctx) => {
      const s = ctx.jsonSchema as Json;
      if (ctx.zodSchema === FileEntrySchema) {
        const object = { ...s };
        for (const k of Object.keys(s)) delete s[k];
        s.anyOf = [{ type: 'string', minLength: 1 }, object];
      } else if (ctx.zodSchema === InputSchema) {
        s.anyOf = [{ required: ['name'] }, { required: ['fqn'] }];
      } else if (ctx.zodSchema === SpecSchema) {
        s.anyOf = [{ required: ['files'] }, { required: ['checkpoint_files'] }];
      }
    },
  }) as Json;
  return {
    $schema: schema.$schema,
    title: 'weight_spec.json',
    description: "Where each weight input of a weight-free ONNX graph finds its bytes (QEfficient's weight spec, versions 1-6).",
    ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== '$schema')),
  };
}
