/**
 * The conformance runner's command line without running BullMQ's suite (no server is started, no
 * checkout needed): `--help` prints the usage and exits 0; an unknown option or a missing
 * `--bullmq-dir` is refused with exit 2, saying why, then the usage.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function conformance(...args: string[]) {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--conditions=zkq-source', 'scripts/conformance.ts', ...args],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  return { status: r.status, out: r.stdout, err: r.stderr };
}

const USAGE = /npm run conformance -- --bullmq-dir \.\.\/bullmq/;

test('conformance --help: the usage, its options and how to make a checkout, exit 0', () => {
  const { status, out, err } = conformance('--help');
  assert.equal(status, 0, err);
  assert.match(out, USAGE);
  for (const option of ['--files', '--json', '--timeout', '--zookeeper', '--causes', '--grep', '--skip-cleanup']) {
    assert.ok(out.includes(option), `${option} in the usage`);
  }
  assert.match(out, /git clone --branch v\d+\.\d+\.\d+ https:\/\/github\.com\/taskforcesh\/bullmq\.git/);
  assert.equal(err, '');
});

test('conformance: an unknown option or a missing --bullmq-dir is refused with the usage, exit 2', () => {
  const unknown = conformance('--bogus');
  assert.equal(unknown.status, 2);
  assert.match(unknown.err, /Unknown option '--bogus'/);
  assert.match(unknown.err, USAGE);
  assert.doesNotMatch(unknown.err, /at parseArgs/, 'no stack trace');
  const missing = conformance('--files', 'queue');
  assert.equal(missing.status, 2);
  assert.match(missing.err, /--bullmq-dir is missing/);
  assert.match(missing.err, USAGE);
});
