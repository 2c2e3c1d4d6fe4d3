/** The viewers' stylesheet: VS Code's theme variables only, so every theme (and high contrast) applies. */
export const VIEWER_CSS = `
body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family);
  font-size: var(--vscode-font-size); margin: 0; padding: 0 16px 16px; }
h1 { font-size: 1.3em; font-weight: 600; margin: 12px 0 4px; word-break: break-all; }
h2 { font-size: 1.1em; font-weight: 600; margin: 18px 0 6px; border-bottom: 1px solid var(--vscode-panel-border); padding-bottom: 3px; }
.summary { color: var(--vscode-descriptionForeground); margin: 0 0 8px; }
.error-line { color: var(--vscode-errorForeground); font-family: var(--vscode-editor-font-family); padding: 12px 0; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 2px 10px 2px 0; white-space: nowrap; }
th { font-weight: 600; }
td.num, th.num { text-align: right; }
code, .mono { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
a, .link { color: var(--vscode-textLink-foreground); cursor: pointer; text-decoration: none; }
a:hover, .link:hover { text-decoration: underline; }
input[type=text], select { background: var(--vscode-input-background); color: var(--vscode-input-foreground);
  border: 1px solid var(--vscode-input-border, transparent); padding: 3px 6px; font: inherit; }
input[type=text] { width: 340px; }
button { background: var(--vscode-button-background); color: var(--vscode-button-foreground); border: none; padding: 3px 10px; cursor: pointer; font: inherit; }
button:hover { background: var(--vscode-button-hoverBackground); }
button.tab { background: transparent; color: var(--vscode-foreground); border-bottom: 2px solid transparent; }
button.tab.active { border-bottom-color: var(--vscode-focusBorder); }
.toolbar { display: flex; gap: 8px; align-items: center; margin: 8px 0; flex-wrap: wrap; }
.vt { border: 1px solid var(--vscode-panel-border); overflow-x: auto; }
.vt-inner { min-width: 820px; }
.vt-head, .vt-row { display: grid; grid-template-columns: minmax(340px, 4fr) 64px minmax(110px, 1.2fr) 76px minmax(60px, 0.6fr) minmax(90px, 1fr);
  gap: 8px; padding: 0 8px; align-items: center; white-space: nowrap; }
.vt-head { font-weight: 600; border-bottom: 1px solid var(--vscode-panel-border); height: 26px; user-select: none; }
.vt-head span { cursor: pointer; }
.vt-head span.sorted::after { content: ' ▾'; }
.vt-head span.sorted.asc::after { content: ' ▴'; }
.vt-body { position: relative; overflow-y: auto; height: 60vh; }
.vt-row { position: absolute; left: 0; right: 0; height: 22px; line-height: 22px; }
.vt-row:hover { background: var(--vscode-list-hoverBackground); }
.vt-row span { overflow: hidden; text-overflow: ellipsis; }
.vt-head span.num, .vt-row span.num { text-align: right; }
.vt-foot { border-top: 1px solid var(--vscode-panel-border); padding: 4px 8px; font-weight: 600; }
.problem { margin: 2px 0; }
.sev-error { color: var(--vscode-errorForeground); }
.sev-warning { color: var(--vscode-editorWarning-foreground); }
.sev-information, .sev-hint { color: var(--vscode-editorInfo-foreground); }
details { margin: 2px 0; }
details.section > summary { margin: 14px 0 6px; padding-bottom: 3px; border-bottom: 1px solid var(--vscode-panel-border); }
details.section > summary h2 { display: inline; margin: 0; border: none; }
.toc { margin: 4px 0; color: var(--vscode-descriptionForeground); }
.banner { margin: 8px 0; padding: 4px 8px; border-left: 3px solid var(--vscode-editorWarning-foreground); background: var(--vscode-textBlockQuote-background); }
.banner.sev-error { border-left: 3px solid var(--vscode-errorForeground); }
summary { cursor: pointer; }
.graph { border: 1px solid var(--vscode-panel-border); overflow: auto; height: 70vh; }
.graph svg text { fill: var(--vscode-foreground); font-family: var(--vscode-editor-font-family); font-size: 11px; }
.graph .node-op rect { fill: var(--vscode-editorWidget-background); stroke: var(--vscode-focusBorder); }
.graph .node-input rect, .graph .node-output rect { fill: var(--vscode-badge-background); stroke: var(--vscode-panel-border); }
.graph .node-input text, .graph .node-output text { fill: var(--vscode-badge-foreground); }
.graph .node-weight rect { fill: var(--vscode-editor-background); stroke: var(--vscode-charts-green, var(--vscode-focusBorder)); stroke-dasharray: 3 2; }
.graph path { fill: none; stroke: var(--vscode-editorLineNumber-foreground); }
.graph marker path { fill: var(--vscode-editorLineNumber-foreground); stroke: none; }
.loading { color: var(--vscode-descriptionForeground); }
`;
