/**
 * The viewers' webview document: a strict Content-Security-Policy (no remote content, scripts
 * only by nonce, styles only from the extension or by nonce), VS Code's theme colors through
 * its CSS variables, and the bundled script dist/viewer.js.
 */
import { randomBytes } from 'node:crypto';
import { VIEWER_CSS } from './style';

/** A fresh nonce for one document. */
export function nonce(): string {
  return randomBytes(18)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '');
}

/** The CSP of a viewer document. */
export function contentSecurityPolicy(cspSource: string, n: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource} 'nonce-${n}'`,
    `script-src 'nonce-${n}'`,
    `font-src ${cspSource}`,
  ].join('; ');
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The HTML shell; the script fills `#app` once the extension posts the page. */
export function viewerHtml(o: { cspSource: string; scriptUri: string; title: string }): string {
  const n = nonce();
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(o.cspSource, n))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(o.title)}</title>
<style nonce="${n}">${VIEWER_CSS}</style>
</head>
<body>
<div id="app"><p class="loading">Reading ${escapeHtml(o.title)}…</p></div>
<script nonce="${n}" src="${escapeHtml(o.scriptUri)}"></script>
</body>
</html>`;
}
