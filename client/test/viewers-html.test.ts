// The viewers' webview document (client/src/viewers/html.ts, style.ts): a strict CSP (nothing
// remote, scripts only by this document's nonce), and colors only from VS Code's theme.
import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy, viewerHtml } from '../src/viewers/html';
import { VIEWER_CSS } from '../src/viewers/style';

const CSP_SOURCE = 'https://file+.vscode-resource.vscode-cdn.net';

function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([k, ...v]) => [k!, v]),
  );
}

describe('viewer webview document', () => {
  const html = viewerHtml({ cspSource: CSP_SOURCE, scriptUri: `${CSP_SOURCE}/ext/dist/viewer.js`, title: 'a<b>.safetensors' });
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!.replace(/&#39;/g, "'");
  const d = directives(csp);

  it('denies everything by default and allows scripts only by nonce, never inline or eval', () => {
    expect(d.get('default-src')).toEqual(["'none'"]);
    const nonce = /'nonce-([A-Za-z0-9]+)'/.exec(d.get('script-src')!.join(' '))![1]!;
    expect(nonce.length).toBeGreaterThanOrEqual(16);
    expect(d.get('script-src')).toEqual([`'nonce-${nonce}'`]);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    // Every <script> and <style> carries that nonce.
    const tags = [...html.matchAll(/<(script|style)\b([^>]*)>/g)];
    expect(tags.length).toBe(2);
    for (const t of tags) expect(t[2]).toContain(`nonce="${nonce}"`);
  });

  it('loads nothing remote: every source is the webview resource origin', () => {
    for (const [k, v] of d)
      if (k !== 'default-src') for (const s of v) expect([CSP_SOURCE, 'data:', expect.stringMatching(/^'nonce-/)]).toContainEqual(s);
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls).toEqual([`${CSP_SOURCE}/ext/dist/viewer.js`]);
  });

  it('a fresh nonce per document, and the title is escaped', () => {
    const n = (h: string) => /'nonce-([A-Za-z0-9]+)'/.exec(h.replace(/&#39;/g, "'"))![1];
    expect(n(viewerHtml({ cspSource: CSP_SOURCE, scriptUri: 'x', title: 't' }))).not.toBe(n(html));
    expect(html).toContain('a&#60;b&#62;.safetensors');
    expect(html).not.toContain('a<b>');
    expect(contentSecurityPolicy(CSP_SOURCE, 'abc')).toContain("'nonce-abc'");
  });

  it('styles use only the theme: colors come from --vscode-* variables', () => {
    expect(VIEWER_CSS).not.toMatch(/#[0-9a-fA-F]{3,8}\b|rgba?\(|hsla?\(/);
    const colors = [
      ...VIEWER_CSS.matchAll(
        /(?:^|[\s;{])(?:color|background|fill|stroke|border|border-(?:top|bottom|left|right)(?:-color)?):\s*([^;]+);/g,
      ),
    ].map((m) => m[1]!);
    expect(colors.length).toBeGreaterThan(10);
    for (const c of colors) {
      if (/^(none|transparent|inherit|0|1px solid transparent|2px solid transparent|none !important)$/.test(c.trim())) continue;
      expect(c, c).toMatch(/var\(--vscode-/);
    }
  });
});
