/**
 * The language features over a checked document: hover, completion, symbols, inlay hints,
 * formatting, code actions and code lenses, each guarded (a failure is logged, never a crash of
 * the server) and answered from the document's check (server.ts keeps the documents and runs).
 */
import type { Connection } from 'vscode-languageserver/node';
import type { CheckRun } from '../../core/src/check';
import { codeActions } from './code-actions';
import { codeLenses } from './code-lens';
import { completionAt } from './completion';
import { compileStateOf } from './compile-state';
import { offsetsOf } from './diagnostics';
import { uriToPath, type SpecDoc, type SpecDocuments } from './documents';
import { formatDocument } from './formatting';
import { guarded, type Log } from './guard';
import { definitionAt } from './definition';
import { hoverAt } from './hover';
import { inlayHints } from './inlay-hints';
import { documentSymbols } from './symbols';

/** What the features read from the server: its log, documents and checks, and the client's capabilities (known after initialize). */
export interface FeatureContext {
  log: Log;
  documents: SpecDocuments;
  /** The document's current check, run if needed. */
  runOf: (uri: string) => Promise<{ d: SpecDoc; run: CheckRun } | undefined>;
  /** The client takes a completion list's default edit range. */
  completionEditRange: () => boolean;
  /** The client runs the server's commands from code actions and lenses. */
  clientCommands: () => boolean;
  /** The client opens a shard at a tensor (initializationOptions.tensorLinks): definition.ts. */
  tensorLinks: () => boolean;
}

/** Registers the feature handlers on `connection`. */
export function registerFeatures(connection: Connection, ctx: FeatureContext): void {
  connection.onHover(
    guarded(ctx.log, 'hover', null, async (p) => {
      const r = await ctx.runOf(p.textDocument.uri);
      if (!r || r.d.session.last?.text !== r.d.doc.getText()) return null;
      return hoverAt(r.d.doc, r.run, r.d.doc.offsetAt(p.position), ctx.tensorLinks());
    }),
  );

  connection.onDefinition(
    guarded(ctx.log, 'definition', null, async (p) => {
      const r = await ctx.runOf(p.textDocument.uri);
      if (!r || r.d.session.last?.text !== r.d.doc.getText()) return null;
      return definitionAt(r.run, r.d.doc.offsetAt(p.position), ctx.tensorLinks());
    }),
  );

  connection.onCompletion(
    guarded(ctx.log, 'completion', null, async (p) => {
      const d = ctx.documents.docs.get(p.textDocument.uri);
      if (!d) return null;
      const r = await ctx.runOf(p.textDocument.uri);
      // Half-typed text may not parse: keys and names then come from the last good check.
      const run = r?.run.parsed.spec ? r.run : (d.lastParsed ?? r?.run);
      const current = !!run && run === r?.run && d.session.last?.text === d.doc.getText();
      return completionAt(d.doc, run, d.doc.offsetAt(p.position), { current, editRange: ctx.completionEditRange() });
    }),
  );

  connection.onDocumentSymbol(
    guarded(ctx.log, 'documentSymbol', [], async (p) => {
      const r = await ctx.runOf(p.textDocument.uri);
      return r ? documentSymbols(r.d.doc, r.run.parsed) : [];
    }),
  );

  connection.languages.inlayHint.on(
    guarded(ctx.log, 'inlayHint', [], async (p) => {
      const r = await ctx.runOf(p.textDocument.uri);
      if (!r || r.d.session.last?.text !== r.d.doc.getText()) return [];
      return inlayHints(r.d.doc, r.run, offsetsOf(r.d.doc, p.range));
    }),
  );

  connection.onDocumentFormatting(
    guarded(ctx.log, 'formatting', [], (p) => {
      const d = ctx.documents.docs.get(p.textDocument.uri);
      return d ? formatDocument(d.doc, p.options.insertFinalNewline === true) : [];
    }),
  );

  connection.onCodeAction(
    guarded(ctx.log, 'codeAction', [], async (p) => {
      const r = await ctx.runOf(p.textDocument.uri);
      return r ? codeActions(r.d.doc, r.run, p.context.diagnostics, ctx.clientCommands()) : [];
    }),
  );

  connection.onCodeLens(
    guarded(ctx.log, 'codeLens', [], async (p) => {
      const d = ctx.documents.docs.get(p.textDocument.uri);
      const file = d?.file || uriToPath(p.textDocument.uri);
      const run = d?.published?.run ?? (d ? (await ctx.runOf(p.textDocument.uri))?.run : undefined);
      return codeLenses(p.textDocument.uri, file ? compileStateOf(file) : undefined, run, ctx.clientCommands());
    }),
  );
}
