// The extension manifest's contributions that no e2e check reaches quickly: the Weight Spec tree
// lives in its own activity-bar container (issue 36), whose icon is a packaged monochrome SVG.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { VSIX_FILES } from '../../test/e2e/vsix.mjs';
/** client/src/tree-view.ts's TREE_VIEW_ID (that module imports vscode, which vitest cannot load). */
const TREE_VIEW_ID = 'weightSpec.exports';

const repo = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
  contributes: {
    viewsContainers?: { activitybar?: { id: string; title: string; icon: string }[] };
    views: Record<string, { id: string; name: string }[]>;
    viewsWelcome: { view: string }[];
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
