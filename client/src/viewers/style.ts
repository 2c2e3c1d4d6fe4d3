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
.tensor-values { margin: 0 0 8px; }
.tensor-values .toolbar { margin: 0 0 4px; }
.histogram { display: flex; align-items: flex-end; gap: 1px; height: 48px; max-width: 480px; margin-top: 4px; }
.histogram span { flex: 1; background: var(--vscode-charts-blue, var(--vscode-focusBorder)); min-width: 2px; }
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
.vt-row.revealed { background: var(--vscode-list-activeSelectionBackground, var(--vscode-editor-selectionBackground)); color: var(--vscode-list-activeSelectionForeground, inherit); outline: 1px solid var(--vscode-focusBorder); outline-offset: -1px; }
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
.graph .gx { display: flex; height: calc(100vh - 150px); min-height: 320px; border: 1px solid var(--vscode-panel-border); }
.gx-wrap { position: relative; flex: 1; min-width: 0; overflow: hidden; }
.gx-canvas { display: block; cursor: grab; outline: none; touch-action: none; }
.gx-canvas:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: -1px; }
.gx-split { flex: none; width: 5px; cursor: col-resize; background: var(--vscode-panel-border); touch-action: none; }
.gx-split:hover, .gx-split:focus-visible { background: var(--vscode-focusBorder); outline: none; }
.gx-panel { width: 340px; flex: none; box-sizing: border-box; overflow: auto; padding: 6px 10px;
  background: var(--vscode-sideBar-background, var(--vscode-editor-background)); word-break: break-all; }
.gx-panel h3 { margin: 4px 0; font-size: 1.1em; }
.gx-panel h4 { margin: 10px 0 2px; font-size: 0.95em; border-bottom: 1px solid var(--vscode-panel-border); }
.gx-value { margin: 4px 0 6px; }
.gx-slot { color: var(--vscode-descriptionForeground); font-weight: 600; }
.gx-doc { margin: 4px 0 6px; color: var(--vscode-descriptionForeground); }
.gx-doc-link { white-space: nowrap; }
.gx-entry { white-space: pre-wrap; margin: 4px 0; padding: 4px; background: var(--vscode-textCodeBlock-background); font-size: 0.9em; }
.gx-stats .stats-line { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.9em; }
.gx-search-box { position: relative; }
.gx-results.flip { left: auto; right: 0; }
.gx-results { position: absolute; z-index: 5; top: 100%; left: 0; width: 520px; max-height: 50vh; overflow: auto;
  background: var(--vscode-editorWidget-background); border: 1px solid var(--vscode-panel-border); }
.gx-hit { padding: 2px 6px; cursor: pointer; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.gx-hit:hover, .gx-hit.active { background: var(--vscode-list-activeSelectionBackground); color: var(--vscode-list-activeSelectionForeground); }
.gx-hit-count { padding: 2px 6px; }
.gx-check { display: inline-flex; align-items: center; gap: 4px; }
.gx-legend { position: absolute; left: 8px; bottom: 8px; padding: 2px 8px; font-size: 0.85em; opacity: 0.92;
  background: var(--vscode-editorWidget-background); border: 1px solid var(--vscode-panel-border); }
.gx-minimap { position: absolute; top: 8px; right: 8px; bottom: 8px; width: 44px; cursor: pointer; touch-action: none; opacity: 0.92;
  background: var(--vscode-editorWidget-background); border: 1px solid var(--vscode-panel-border); }
.gx-minimap.lr { left: 8px; bottom: auto; width: auto; height: 44px; }
.gx-mm-base { position: absolute; left: 0; top: 0; }
.gx-mm-view { position: absolute; box-sizing: border-box; pointer-events: none; border: 1.5px solid var(--vscode-focusBorder);
  background: var(--vscode-editor-selectionBackground); opacity: 0.8; }
.gx-legend-item { display: flex; align-items: center; gap: 6px; }
.gx-swatch { display: inline-block; width: 14px; height: 9px; border: 1px solid var(--vscode-panel-border); }
.gx-swatch.cat-layer { background: var(--vscode-charts-blue); }
.gx-swatch.cat-activation { background: var(--vscode-charts-red); }
.gx-swatch.cat-normalization { background: var(--vscode-charts-green); }
.gx-swatch.cat-tensor { background: var(--vscode-charts-orange); }
.gx-swatch.cat-other { background: var(--vscode-charts-purple); }
.gx-swatch.pill { background: var(--vscode-badge-background); border-radius: 5px; }
.gx-swatch.ref { background: var(--vscode-editorWidget-background); border-radius: 5px; }
.gx-swatch.row-weight { background: var(--vscode-charts-green); height: 3px; }
.gx-swatch.row-const { background: var(--vscode-charts-yellow); height: 3px; }
.gx-swatch.block { border: 2px solid var(--vscode-charts-blue); }
.loading { color: var(--vscode-descriptionForeground); }
`;
