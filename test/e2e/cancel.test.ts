/** `zkq cancel` through the built binary: a job a `zkq worker` daemon runs on a thread is cancelled. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { waitFor } from '../helpers/zk.js';
import { cliEnv, FIXTURES, within, ZkqProcess, zkq, zkqJson } from './cli.js';

test('cancel reaches the worker daemon running the job; a job not running is refused', async (t) => {
  const env = await cliEnv(t);
  const never = join(mkdtempSync(join(tmpdir(), 'zkq-cancel-')), 'never');
  const added = await zkqJson([
    'add',
    'work',
    'hold',
    '--data',
    JSON.stringify({ progress: 1, release: never }),
    ...env.global,
  ]);
  const worker = new ZkqProcess(['worker', 'work', '--processor', join(FIXTURES, 'hold.js'), ...env.global]);
  t.after(() => worker.dispose());
  await waitFor(async () => (await zkqJson(['job', 'work', added.id, ...env.global])).state === 'active', {
    timeoutMs: 60_000,
    intervalMs: 200,
    what: 'the job to be active',
  });

  const cancelled = await zkq(['cancel', 'work', added.id, '--reason', 'sent by mistake', ...env.global]);
  assert.equal(cancelled.code, 0, cancelled.stderr);
  assert.equal(cancelled.stdout, `cancel requested for job ${added.id}\n`);
  // a processor on a thread cannot see its signal: the thread is stopped, the job fails with the reason
  const failed = await waitFor(
    async () => {
      const job = await zkqJson(['job', 'work', added.id, ...env.global]);
      return job.state === 'failed' ? job : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, what: 'the job to fail' },
  );
  assert.equal(failed.failedReason, 'sent by mistake');

  const again = await zkq(['cancel', 'work', added.id, ...env.global]);
  assert.equal(again.code, 1);
  assert.equal(again.stderr, `zkq: job ${added.id} is failed, not active: nothing to cancel\n`);
  const missing = await zkq(['cancel', 'work', 'nope', ...env.global]);
  assert.equal(missing.code, 5);

  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});
