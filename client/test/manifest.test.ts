// The extension manifest's contributions that no e2e check reaches quickly: the Weight Spec tree
// lives in its own activity-bar container (issue 36), whose icon is a packaged monochrome SVG.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { VSIX_FILES } from '../../test/e2e/vsix.mjs';
import { CLIENT_COMMANDS } from '../../core/src/protocol';
import { codeLenses } from '../../server/src/code-lens';
/** client/src/tree-view.ts's TREE_VIEW_ID (that module imports vscode, which vitest cannot load). */
const TREE_VIEW_ID = 'weightSpec.exports';

const repo = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
  contributes: {
    viewsContainers?: { activitybar?: { id: string; title: string; icon: string }[] };
    views: Record<string, { id: string; name: string }[]>;
    viewsWelcome: { view: string }[];
    walkthroughs: { steps: { id: string; description: string; completionEvents: string[] }[] }[];
    commands: { command: string; title: string }[];
    menus: { commandPalette: { command: string; when: string }[] };
  };
};

describe('the Weight Spec view container', () => {
  it('puts the tree in its own activity-bar container, not in the explorer', () => {
    const containers = pkg.contributes.viewsContainers?.activitybar ?? [];
    const own = containers.find((c) => c.title === 'Weight Spec');
    expect(own, 'an activity-bar container titled "Weight Spec"').toBeDefined();
    expect(pkg.contributes.views[own!.id]?.map((v) => v.id)).toEqual([TREE_VIEW_ID]);
    expect(pkg.contributes.views.explorer ?? []).toEqual([]);
    expect(pkg.contributes.viewsWelcome.map((w) => w.view)).toContain(TREE_VIEW_ID);
  });

  it('has a packaged monochrome SVG icon that VS Code can tint', () => {
    const own = pkg.contributes.viewsContainers!.activitybar!.find((c) => c.title === 'Weight Spec')!;
    expect(own.icon).toMatch(/^media\/.+\.svg$/);
    const svg = fs.readFileSync(path.join(repo, own.icon), 'utf8');
    expect(svg).toContain('viewBox="0 0 24 24"');
    expect(svg).toContain('currentColor');
    // No fixed colours: the activity bar draws icons in the theme's foreground.
    expect(svg).not.toMatch(/(fill|stroke)="#/);
    expect(VSIX_FILES).toContain(`extension/${own.icon}`);
  });
});

describe('the viewers and JSON documents (issue 36 items 1 and 10)', () => {
  const raw = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
    contributes: {
      customEditors: { viewType: string; selector: { filenamePattern: string }[]; priority: string }[];
      jsonValidation: { fileMatch: string[] }[];
      jsonLanguageParticipants?: unknown;
      configurationDefaults?: Record<string, Record<string, unknown>>;
      languages: { id: string; filenames?: string[]; filenamePatterns?: string[] }[];
    };
  };

  it("offers the graph's SVG and PNG export in the palette (the command names the ONNX viewer when none is open)", () => {
    const src = fs.readFileSync(path.join(repo, 'client/src/viewers/index.ts'), 'utf8');
    for (const id of ['weightSpec.graph.exportSvg', 'weightSpec.graph.exportPng']) {
      expect(pkg.contributes.commands.find((c) => c.command === id)?.title).toMatch(/^Export Graph (as SVG|View as PNG)…$/);
      // Not hidden behind a when clause (an e2e run found no palette row with activeCustomEditorId).
      expect(pkg.contributes.menus.commandPalette.find((m) => m.command === id)).toBeUndefined();
      // Registered by the viewers (index.ts imports vscode, which vitest cannot load: read as text).
      expect(src).toContain(`'${id}'`);
    }
  });

  it('makes both viewers the default editors of their files', () => {
    const byPattern = new Map(raw.contributes.customEditors.map((e) => [e.selector[0]!.filenamePattern, e]));
    expect(byPattern.get('*.onnx')).toMatchObject({ viewType: 'weightSpec.onnxViewer', priority: 'default' });
    expect(byPattern.get('*.safetensors')).toMatchObject({ viewType: 'weightSpec.safetensorsViewer', priority: 'default' });
  });

  it('names spec files alike for the language, the schema and the client (json documents included)', () => {
    const lang = raw.contributes.languages.find((l) => l.id === 'weight-spec')!;
    expect([...(lang.filenames ?? []), ...(lang.filenamePatterns ?? [])]).toEqual(['weight_spec.json', '*.weight_spec.json']);
    expect(raw.contributes.jsonValidation[0]!.fileMatch).toEqual(['weight_spec.json', '*.weight_spec.json']);
    // VS Code's JSON service stays off weight-spec documents (README "JSON tools": doubled outlines and errors).
    expect(raw.contributes.jsonLanguageParticipants).toBeUndefined();
    // Only the server's completions inside a spec: no words from other files (issue 50.3).
    expect(raw.contributes.configurationDefaults?.['[weight-spec]']).toEqual({ 'editor.wordBasedSuggestions': 'off' });
    const client = fs.readFileSync(path.join(repo, 'client', 'src', 'language-client.ts'), 'utf8');
    expect(client).toContain("SPEC_FILE_PATTERN = '**/{weight_spec.json,*.weight_spec.json}'");
    expect(client).toMatch(/\['json', 'jsonc'\]\.map\(\(language\) => \(\{ scheme: 'file', language, pattern: SPEC_FILE_PATTERN \}\)\)/);
  });
});

describe('the Getting Started walkthrough', () => {
  const steps = pkg.contributes.walkthroughs[0]!.steps;
  const stepOf = (command: string) => steps.find((s) => s.completionEvents.includes(`onCommand:${command}`))?.id;

  it("ticks a step whichever way its command runs: the spec's code lenses (Compile, Re-run compile, Run prompt…) too (issue 50)", () => {
    const uri = 'file:///e/weight_spec.json';
    const lensCommands = new Set(
      (['never-compiled', 'stale', 'up-to-date'] as const).flatMap((state) =>
        codeLenses(uri, { state } as never, undefined, true).map((l) => l.command!.command),
      ),
    );
    lensCommands.delete(CLIENT_COMMANDS.inspect); // inspecting is no walkthrough step
    expect([...lensCommands].map((c) => [c, stepOf(c)])).toEqual([
      [CLIENT_COMMANDS.prepare, 'prepare'],
      [CLIENT_COMMANDS.compile, 'compile'],
      [CLIENT_COMMANDS.recompile, 'compile'],
      [CLIENT_COMMANDS.runPrompt, 'run'],
    ]);
  });

  it('the Compile step says where the lens and the Weight Spec view are', () => {
    const compile = steps.find((s) => s.id === 'compile')!;
    expect(compile.description).toContain('Compile lens above the spec');
    expect(compile.description).toContain('Weight Spec view (its own icon in the activity bar)');
  });
});
