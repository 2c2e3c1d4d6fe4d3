/**
 * Task provider of type `weight-spec`: export / prepare / compile as processes of the bundled
 * CLI (ProcessExecution), so output, cancellation (Terminate Task) and the `$weight-spec`
 * problem matcher for the CLI's one-line errors come from VS Code itself. Tasks are offered
 * for every model folder (config.json with a model_type) and every export folder in the
 * workspace, and can be written in tasks.json (see `taskDefinitions` in package.json).
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { taskArgs, type WeightSpecTaskDefinition } from '../../core/src/editor/cli-args';
import { readJsonTextSync } from '../../core/src/paths';
import { SPEC_GLOB, specFileIn } from '../../core/src/spec/file-names';
import { locateOrt } from './ort-locator';
import { cliEnvFor, ortSearch, settings } from './settings';

export const TASK_TYPE = 'weight-spec';

const EXCLUDE = '{**/node_modules/**,**/.git/**,**/*-qeff-prepared-*/**}';

export class WeightSpecTaskProvider implements vscode.TaskProvider {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  async provideTasks(): Promise<vscode.Task[]> {
    const tasks: vscode.Task[] = [];
    for (const cfg of await vscode.workspace.findFiles('**/config.json', EXCLUDE, 50)) {
      let modelType: unknown;
      try {
        modelType = (JSON.parse(readJsonTextSync(cfg.fsPath)) as { model_type?: unknown }).model_type;
      } catch {
        continue;
      }
      if (typeof modelType !== 'string') continue;
      const dir = path.dirname(cfg.fsPath);
      const folder = vscode.workspace.getWorkspaceFolder(cfg);
      const name = path.basename(dir);
      const s = settings(cfg);
      tasks.push(
        this.make(
          { type: TASK_TYPE, command: 'export', config: dir, out: path.join(path.dirname(dir), `${name}-weight-free`) },
          folder,
          `export ${name}`,
        ),
      );
      if (fs.readdirSync(dir).some((f) => f.endsWith('.safetensors'))) {
        tasks.push(this.make({ type: TASK_TYPE, command: 'prepare', checkpoint: dir, dtype: s.defaultDtype }, folder, `prepare ${name}`));
      }
    }
    for (const spec of await vscode.workspace.findFiles(SPEC_GLOB, EXCLUDE, 50)) {
      const dir = path.dirname(spec.fsPath);
      if (!fs.readdirSync(dir).some((n) => n.endsWith('.onnx')) || specFileIn(dir) !== spec.fsPath) continue;
      tasks.push(
        this.make(
          { type: TASK_TYPE, command: 'compile', exportDir: dir, backend: settings(spec).compileBackend },
          vscode.workspace.getWorkspaceFolder(spec),
          `compile ${path.basename(dir)}`,
        ),
      );
    }
    return tasks;
  }

  resolveTask(task: vscode.Task): vscode.Task | undefined {
    const d = task.definition as WeightSpecTaskDefinition;
    if (d.type !== TASK_TYPE) return undefined;
    const scope = task.scope && typeof task.scope === 'object' ? task.scope : vscode.TaskScope.Workspace;
    return this.make(d, scope, task.name);
  }

  /** A task running `node dist/cli.js <args of d>`. */
  make(d: WeightSpecTaskDefinition, scope: vscode.WorkspaceFolder | vscode.TaskScope | undefined, name: string): vscode.Task {
    const resource = scope && typeof scope === 'object' ? scope.uri : undefined;
    const s = settings(resource);
    let env = cliEnvFor(resource);
    let execution: vscode.ProcessExecution | vscode.CustomExecution;
    try {
      const args = taskArgs(d, { dtype: s.defaultDtype, ...(s.maxRamGb > 0 ? { maxRamGb: s.maxRamGb } : {}), backend: s.compileBackend });
      if (d.command === 'compile' && (d.backend ?? s.compileBackend) === 'ort') {
        const ort = locateOrt(ortSearch(this.context, resource));
        if (ort && !('error' in ort)) env = cliEnvFor(resource, ort.dir);
      }
      execution = new vscode.ProcessExecution(process.execPath, [this.context.asAbsolutePath(path.join('dist', 'cli.js')), ...args], {
        env,
        ...(scope && typeof scope === 'object' ? { cwd: scope.uri.fsPath } : {}),
      });
    } catch (e) {
      // A definition missing a field: the task prints why and fails, instead of vanishing.
      const msg = e instanceof Error ? e.message : String(e);
      this.log.error(msg);
      execution = new vscode.ProcessExecution(
        process.execPath,
        ['-e', `console.error(${JSON.stringify(`weight-spec: ${msg}`)}); process.exit(2)`],
        { env },
      );
    }
    const task = new vscode.Task(d, scope ?? vscode.TaskScope.Workspace, name, TASK_TYPE, execution, ['$weight-spec']);
    task.group = d.command === 'compile' ? vscode.TaskGroup.Build : undefined;
    task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
    return task;
  }
}
