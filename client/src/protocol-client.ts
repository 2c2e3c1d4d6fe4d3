/**
 * The extension's side of core/src/protocol.ts. vscode-languageclient 9 bundles vscode-jsonrpc
 * 8, whose RequestType/NotificationType classes are nominally distinct from the ones the
 * protocol is written with (the server library's), so these two helpers send and receive by
 * the definition's method name while keeping its parameter and result types.
 */
import type { Disposable, LanguageClient } from 'vscode-languageclient/node';
import type { NotificationType, RequestType } from 'vscode-languageserver-protocol';

/** Sends a custom request of the shared protocol. */
export function sendRequest<P, R>(client: LanguageClient, type: RequestType<P, R, void>, params: P): Promise<R> {
  return client.sendRequest<R>(type.method, params);
}

/** Handles a custom notification of the shared protocol. */
export function onNotification<P>(client: LanguageClient, type: NotificationType<P>, handler: (params: P) => void): Disposable {
  return client.onNotification(type.method, handler);
}
