/**
 * The sentence-transformers pipeline of a model folder, as the embedding graph computes it:
 * `modules.json` lists the modules (Transformer, then Pooling, then Normalize); Pooling's
 * `config.json` says which poolings are concatenated (CLS, max, mean, mean/√len, in
 * sentence-transformers' order). Sources: UKPLab/sentence-transformers
 * `sentence_transformers/models/Pooling.py` (13b4da22) and `Normalize.py` (4edb4a94);
 * QEfficient `QEfficient/transformers/embeddings/embedding_utils.py` (`PooledModel`,
 * `mean_pooling`, `max_pooling`, `cls_pooling`; ebf55e81).
 *
 * A folder without modules.json has no pooling: the graph outputs last_hidden_state only. A
 * module the graph does not build (Dense, a weighted-mean or last-token pooling) is refused with
 * one line naming the file: an embedding that silently skipped it would be wrong.
 */
import path from 'node:path';
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { FormatError, oneLine } from '../../errors';
import { isInside, readRegularFile } from '../../paths';
import { parseWith } from '../families/config';

/** One pooling of sentence-transformers' Pooling module. */
export type PoolingMode = 'cls' | 'max' | 'mean' | 'mean_sqrt_len';

/** What the graph computes after the encoder. */
export interface PoolingSpec {
  /** Concatenated in this order (sentence-transformers': cls, max, mean, mean_sqrt_len). */
  modes: PoolingMode[];
  /** Normalize (L2, eps 1e-12 as `F.normalize`) listed after Pooling. */
  normalize: boolean;
  /** The files it was read from (for the report). */
  files: string[];
}

const moduleList = z.array(
  z.looseObject({ idx: z.number().int().optional(), name: z.string().optional(), path: z.string(), type: z.string() }),
);
const poolingConfig = z.looseObject({
  word_embedding_dimension: z.number().int().positive().optional(),
  pooling_mode_cls_token: z.boolean().optional(),
  pooling_mode_max_tokens: z.boolean().optional(),
  pooling_mode_mean_tokens: z.boolean().optional(),
  pooling_mode_mean_sqrt_len_tokens: z.boolean().optional(),
  pooling_mode_weightedmean_tokens: z.boolean().optional(),
  pooling_mode_lasttoken: z.boolean().optional(),
});

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readRegularFile(file, 'utf8');
  } catch (err) {
    throw err instanceof FormatError ? err : new FormatError(file, `cannot read: ${oneLine(err)}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new FormatError(file, `not valid JSON: ${oneLine(err)}`);
  }
}

/** The class name of a module entry (`sentence_transformers.models.Pooling` → `Pooling`). */
const className = (type: string) => type.slice(type.lastIndexOf('.') + 1);

/**
 * Reads `<dir>/modules.json` and the Pooling module's config; undefined when the folder has no
 * modules.json. `hidden` is the encoder's width (Pooling's word_embedding_dimension must match).
 */
export async function readPooling(dir: string, hidden: number): Promise<PoolingSpec | undefined> {
  const listFile = path.join(dir, 'modules.json');
  if (!existsSync(listFile)) return undefined;
  const modules = parseWith(moduleList, await readJson(listFile), listFile);
  const kinds = modules.map((m) => className(m.type));
  const at = (k: string) => kinds.indexOf(k);
  const unknown = kinds.find((k) => !['Transformer', 'Pooling', 'Normalize'].includes(k));
  if (unknown !== undefined)
    throw new FormatError(listFile, `module "${unknown}" is not built into the embedding graph (Transformer, Pooling, Normalize are)`);
  if (at('Transformer') !== 0) throw new FormatError(listFile, 'the first module must be the Transformer');
  const p = at('Pooling');
  if (p < 0) {
    if (at('Normalize') >= 0) throw new FormatError(listFile, 'Normalize without a Pooling module');
    return undefined;
  }
  if (at('Normalize') >= 0 && at('Normalize') < p) throw new FormatError(listFile, 'Normalize comes before Pooling');
  const rel = modules[p]!.path;
  const poolDir = path.resolve(dir, rel);
  // the module's folder is read only inside the model folder
  if (path.isAbsolute(rel) || !isInside(dir, poolDir)) throw new FormatError(listFile, `Pooling path "${rel}" leaves the model folder`);
  const cfgFile = path.join(poolDir, 'config.json');
  const c = parseWith(poolingConfig, await readJson(cfgFile), cfgFile);
  if (c.pooling_mode_weightedmean_tokens) throw new FormatError(cfgFile, 'weighted-mean pooling is not built into the embedding graph');
  if (c.pooling_mode_lasttoken) throw new FormatError(cfgFile, 'last-token pooling is not built into the embedding graph');
  if (c.word_embedding_dimension !== undefined && c.word_embedding_dimension !== hidden)
    throw new FormatError(cfgFile, `word_embedding_dimension ${c.word_embedding_dimension} differs from the model's hidden_size ${hidden}`);
  const modes: PoolingMode[] = [];
  if (c.pooling_mode_cls_token) modes.push('cls');
  if (c.pooling_mode_max_tokens) modes.push('max');
  // Pooling's own default is mean pooling (pooling_mode_mean_tokens = True)
  if (c.pooling_mode_mean_tokens ?? !(c.pooling_mode_cls_token || c.pooling_mode_max_tokens || c.pooling_mode_mean_sqrt_len_tokens))
    modes.push('mean');
  if (c.pooling_mode_mean_sqrt_len_tokens) modes.push('mean_sqrt_len');
  if (modes.length === 0) throw new FormatError(cfgFile, 'no pooling mode is set');
  return { modes, normalize: at('Normalize') > p, files: [listFile, cfgFile] };
}
