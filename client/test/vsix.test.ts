// Packages the extension with vsce (as `npm run package` does) and checks the .vsix holds the
// bundled dist, manifest, grammar, language configuration, README and LICENSE — and nothing
// else: no sources, tests, fixtures, node_modules or onnxruntime-node — and stays < 15 MB.
// The zip is read with core's own ZipReader.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ZipReader } from '../../core/src/formats/pickle/zip';
import { VSCE_PACKAGE_ARGS, VSIX_FILES, VSIX_MAX_BYTES } from '../../test/e2e/vsix.mjs';
import { tempDirs } from '../../test/support/temp';

const tmpDir = tempDirs('ws-');

const repo = path.resolve(__dirname, '..', '..');
describe('the packaged .vsix', () => {
  it('holds exactly the allow-listed files and is under 15 MB', async () => {
    for (const f of ['extension.js', 'server.js', 'cli.js', 'prepare-worker.js']) {
      expect(fs.existsSync(path.join(repo, 'dist', f)), `dist/${f} must be built before packaging (npm run build)`).toBe(true);
    }
    const out = path.join(tmpDir('ws-vsix-'), 'weight-spec.vsix');
    execFileSync(path.join(repo, 'node_modules', '.bin', 'vsce'), [...VSCE_PACKAGE_ARGS, '--out', out], {
      cwd: repo,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(fs.statSync(out).size).toBeLessThan(VSIX_MAX_BYTES);
    const zip = await ZipReader.open(out);
    try {
      const names = [...zip.entries.keys()].sort();
      expect(names).toEqual([...VSIX_FILES].sort());
      // The manifest inside is ours, with the grammar and main entry point.
      const pkg = JSON.parse(Buffer.from(await zip.readChecked(zip.entries.get('extension/package.json')!, 1 << 20)).toString('utf8'));
      expect(pkg.main).toBe('./dist/extension.js');
      expect(pkg.contributes.grammars[0].path).toBe('./syntaxes/weight-spec.tmLanguage.json');
      // The marketplace face: the user README (not the developers'), the icon, the walkthrough's pages.
      const readme = Buffer.from(await zip.readChecked(zip.entries.get('extension/readme.md')!, 1 << 20)).toString('utf8');
      const userReadme = fs.readFileSync(path.join(repo, 'client', 'README.md'), 'utf8');
      expect(readme.split('\n')[0]).toBe(userReadme.split('\n')[0]);
      expect(readme).toContain('## Settings');
      expect(readme).not.toContain('## Development');
      expect(pkg.icon).toBe('media/icon.png');
      for (const step of pkg.contributes.walkthroughs[0].steps) expect(names).toContain(`extension/${step.media.markdown}`);
    } finally {
      await zip.close();
    }
  }, 120_000);

  it('npm run package runs vsce with the same arguments, without --allow-missing-repository', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      repository?: { url?: string };
    };
    expect(pkg.scripts.package).toContain(`vsce ${VSCE_PACKAGE_ARGS.join(' ')} --out weight-spec.vsix`);
    expect(pkg.scripts.package).not.toContain('--allow-missing');
    expect(pkg.repository?.url).toMatch(/^https:\/\//);
  });

  it('.vscodeignore is an allow-list (ignores everything, then re-includes)', () => {
    const lines = fs
      .readFileSync(path.join(repo, '.vscodeignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(lines[0]).toBe('**');
    expect(lines.slice(1).every((l) => l.startsWith('!'))).toBe(true);
  });
});
