import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sharedZooKeeper } from '@zkq/testing';

const run = promisify(execFile);
const example = (name: string) => fileURLToPath(new URL(`../../../examples/${name}`, import.meta.url));

// The examples run against the built packages, as a user runs them (`npm test` builds first).
async function runExample(name: string): Promise<string> {
  const { stdout } = await run(process.execPath, [example(name)], {
    env: { ...process.env, ZKQ_ZK: await sharedZooKeeper(), NODE_OPTIONS: '' },
    timeout: 60_000,
  });
  return stdout;
}

test('examples/queue-and-worker.mjs runs to the end', async () => {
  const out = await runExample('queue-and-worker.mjs');
  assert.match(out, /welcome result: \{ sentAt: \d+ \}/);
  assert.match(out, /failed \d+: bad address not-an-address/);
  assert.match(out, /counts: \{ completed: 3, failed: 1, waiting: 0, delayed: 0, active: 0 \}/);
});

test('examples/recipes.mjs runs to the end', async () => {
  const out = await runExample('recipes.mjs');
  assert.equal((out.match(/holders now: 1\)/g) ?? []).length, 3);
  assert.match(out, /election: leader is node-0/);
  assert.equal((out.match(/barrier: member \d passed/g) ?? []).length, 3);
});

test('examples/flows.mjs runs to the end', async () => {
  const out = await runExample('flows.mjs');
  assert.match(out, /added parent \d+ \(waiting-children\) with 3 children/);
  assert.match(out, /report: north 200, south 50; 3 returned/);
  assert.match(out, /dependencies: \{ processed: 4, unprocessed: 0, ignored: 0, failed: 0 \}/);
});
