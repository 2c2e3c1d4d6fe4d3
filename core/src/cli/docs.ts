/**
 * docs/CLI.md's reference part, generated from the tables the CLI itself parses with
 * (each command's defineCommand: summary, synopsis, flags, details), so the document cannot
 * drift from `--help`. Only the regions between `<!-- generated:NAME -->` and
 * `<!-- /generated:NAME -->` are replaced; the prose around them (exit codes, problem codes,
 * progress) is hand-written. `npm run docs:cli` writes the file; core/test/cli/cli-docs.test.ts
 * fails when the committed file differs from what this renders.
 */
import type { FlagDef } from './args';
import type { CommandSpec } from './command';
import { COMMANDS } from './main';

/** A markdown table cell: pipes escaped, one line. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

function flagHead(name: string, d: FlagDef): string {
  return `\`--${name}${d.type === 'boolean' ? '' : ` ${d.placeholder ?? '<value>'}`}\``;
}

function flagText(d: FlagDef): string {
  const extra = [
    d.choices ? `one of ${d.choices.map((c) => `\`${c}\``).join(', ')}` : '',
    d.multiple ? 'repeatable' : '',
    d.required ? 'required' : '',
  ]
    .filter(Boolean)
    .join('; ');
  return cell(`${d.description}${extra ? ` (${extra})` : ''}`);
}

/** One synopsis line as help prints it; a line that starts with spaces continues the one above. */
const synopsisLine = (s: string) => (s.startsWith(' ') ? `${' '.repeat(12)}${s.trimStart()}` : `weight-spec ${s}`);

/** The synopsis of every command, as `weight-spec --help` and each command's help give it. */
export function synopsisBlock(commands: readonly CommandSpec[] = COMMANDS): string {
  return ['```', ...commands.flatMap((c) => c.synopsis.map(synopsisLine)), '```'].join('\n');
}

/** One section per command: summary, synopsis, every flag with its value and meaning, details. */
export function commandsReference(commands: readonly CommandSpec[] = COMMANDS): string {
  return commands
    .map((c) => {
      const flags = Object.entries(c.flags as Record<string, FlagDef>);
      return [
        `### \`${c.name}\``,
        '',
        `${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.`,
        '',
        '```',
        ...c.synopsis.map(synopsisLine),
        '```',
        '',
        '| flag | meaning |',
        '|---|---|',
        ...flags.map(([n, d]) => `| ${flagHead(n, d)} | ${flagText(d)} |`),
        "| `--help` | show the command's help |",
        ...(c.details?.length ? ['', c.details.join('\n')] : []),
      ].join('\n');
    })
    .join('\n\n');
}

/** The generated regions by name. */
export function generatedRegions(): Record<string, string> {
  return { synopsis: synopsisBlock(), commands: commandsReference() };
}

/**
 * `doc` with each `<!-- generated:NAME -->…<!-- /generated:NAME -->` region replaced by its
 * rendering. Throws when a region is missing (the document must keep its markers).
 */
export function renderCliDoc(doc: string, regions: Record<string, string> = generatedRegions()): string {
  let out = doc;
  for (const [name, body] of Object.entries(regions)) {
    const open = `<!-- generated:${name} -->`;
    const close = `<!-- /generated:${name} -->`;
    const a = out.indexOf(open);
    const b = out.indexOf(close);
    if (a < 0 || b < a) throw new Error(`docs/CLI.md lacks the markers ${open} … ${close}`);
    out = `${out.slice(0, a + open.length)}\n${body}\n${out.slice(b)}`;
  }
  return out;
}
