import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

describe('activation', () => {
  it('the extension is installed and activates', async () => {
    const ext = vscode.extensions.getExtension('weight-spec.weight-spec');
    assert.ok(ext, 'extension weight-spec.weight-spec not found');
    await ext.activate();
    assert.equal(ext.isActive, true);
  });
});
