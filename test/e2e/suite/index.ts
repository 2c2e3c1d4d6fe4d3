/**
 * The extension-tests entry point (`extensionTestsPath`) VS Code loads in the extension host:
 * runs every `*.test.js` beside it with mocha and resolves once they finished, rejecting when
 * any failed (VS Code turns that into the exit code). Each result line also goes to the file
 * named by WEIGHT_SPEC_E2E_REPORT (code-server's extension host has no terminal of its own)
 * and the counts to WEIGHT_SPEC_E2E_RESULTS as JSON, for the closing `N passed, N failed`.
 */
import fs from 'node:fs';
import path from 'node:path';
import Mocha from 'mocha';

const reportFile = process.env.WEIGHT_SPEC_E2E_REPORT;
const resultsFile = process.env.WEIGHT_SPEC_E2E_RESULTS;

function log(line: string): void {
  console.log(line);
  if (reportFile) fs.appendFileSync(reportFile, line + '\n');
}

const { EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING, EVENT_SUITE_BEGIN, EVENT_RUN_END } = Mocha.Runner.constants;

/** One line per test, failures with their message and stack. */
class LineReporter extends Mocha.reporters.Base {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    let passed = 0;
    let pending = 0;
    const failures: { title: string; error: string }[] = [];
    runner.on(EVENT_SUITE_BEGIN, (s: Mocha.Suite) => {
      if (s.title) log(`${'  '.repeat(Math.max(0, s.titlePath().length - 1))}${s.title}`);
    });
    runner.on(EVENT_TEST_PASS, (t: Mocha.Test) => {
      passed++;
      log(`${'  '.repeat(t.titlePath().length - 1)}✓ ${t.title} (${t.duration ?? 0} ms)`);
    });
    runner.on(EVENT_TEST_PENDING, (t: Mocha.Test) => {
      pending++;
      log(`${'  '.repeat(t.titlePath().length - 1)}- ${t.title} (pending)`);
    });
    runner.on(EVENT_TEST_FAIL, (t: Mocha.Test, err: Error) => {
      const error = `${err?.message ?? String(err)}\n${err?.stack ?? ''}`;
      failures.push({ title: t.fullTitle(), error });
      log(`${'  '.repeat(t.titlePath().length - 1)}✗ ${t.title}\n      ${error.split('\n').slice(0, 12).join('\n      ')}`);
    });
    runner.once(EVENT_RUN_END, () => {
      log(`mocha (in VS Code): ${passed} passed, ${failures.length} failed${pending ? `, ${pending} skipped` : ''}`);
      if (resultsFile) fs.writeFileSync(resultsFile, JSON.stringify({ passed, failed: failures.length, pending, failures }, null, 2));
    });
  }
}

/** Called by VS Code once the extension host is up. */
export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'bdd', timeout: 180_000, color: false, reporter: LineReporter as never });
  const grep = process.env.WEIGHT_SPEC_E2E_GREP;
  if (grep) mocha.grep(grep);
  for (const f of fs
    .readdirSync(__dirname)
    .filter((n) => n.endsWith('.test.js'))
    .sort()) {
    mocha.addFile(path.join(__dirname, f));
  }
  await new Promise<void>((resolve, reject) => {
    try {
      mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} test(s) failed`)) : resolve()));
    } catch (e) {
      if (resultsFile)
        fs.writeFileSync(resultsFile, JSON.stringify({ passed: 0, failed: 1, failures: [{ title: 'load', error: String(e) }] }));
      reject(e);
    }
  });
}
