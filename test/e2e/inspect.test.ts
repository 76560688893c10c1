/**
 * Looking at queues through the built binary: commands that only read
 * create nothing and exit 8 on a missing queue; `zkq queues`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session } from '@zkq/core';
import { type CliEnv, cliEnv, zkq, zkqJson } from './cli.js';

/** Whether `path` exists on the server, asked from a session at the root. */
async function nodeExists(env: CliEnv, path: string): Promise<boolean> {
  const session = await Session.connect({ connectionString: env.zk });
  try {
    return (await session.exists(path)) !== null;
  } finally {
    await session.close();
  }
}

test('read-only commands on a queue that does not exist create nothing and exit 8', async (t) => {
  const env = await cliEnv(t);
  const missing = `zkq: queue typo does not exist under /${env.namespace} (zkq queues lists its queues)\n`;
  for (const args of [
    ['stats', 'typo'],
    ['jobs', 'typo'],
    ['job', 'typo', '1'],
    ['leader', 'typo'],
    ['events', 'typo'],
  ]) {
    const r = await zkq([...args, ...env.global]);
    assert.equal(r.code, 8, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, missing, args.join(' '));
    assert.equal(r.stdout, '');
  }
  assert.equal(await nodeExists(env, `/${env.namespace}`), false, 'not even the namespace was created');

  // In an existing namespace, the queue's tree is not created either.
  assert.equal((await zkq(['add', 'real', 'x', ...env.global])).code, 0);
  const r = await zkq(['stats', 'typo', ...env.global]);
  assert.equal(r.code, 8, r.stderr);
  assert.equal(await nodeExists(env, `/${env.namespace}/typo`), false);
});

test('queues lists the queues under the namespace with their counts', async (t) => {
  const env = await cliEnv(t);
  assert.equal((await zkq(['queues', ...env.global])).stdout, '(none)\n', 'an empty namespace has none');
  assert.equal((await zkq(['add', 'mail', 'x', ...env.global])).code, 0);
  assert.equal((await zkq(['add', 'mail', 'y', '--delay', '600000', ...env.global])).code, 0);
  assert.equal((await zkq(['add', 'audit', 'x', ...env.global])).code, 0);
  assert.equal((await zkq(['pause', 'audit', ...env.global])).code, 0);
  assert.equal((await zkq(['lock', 'l', ...env.global, '--', process.execPath, '-e', '0'])).code, 0);

  const list = await zkqJson(['queues', ...env.global]);
  assert.deepEqual(
    list.map((q: { queue: string; paused: boolean }) => [q.queue, q.paused]),
    [
      ['audit', true],
      ['mail', false],
    ],
    'sorted, without the lock root',
  );
  assert.equal(list[1].counts.waiting, 1);
  assert.equal(list[1].counts.delayed, 1);
  assert.equal(list[0].counts.paused, 1);

  const table = await zkq(['queues', ...env.global]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^QUEUE\s+PAUSED\s+WAITING\s+PRIORITIZED\s+DELAYED\s+ACTIVE\s+COMPLETED\s+FAILED$/m);
  assert.match(table.stdout, /^audit\s+yes\s+1\s+0\s+0\s+0\s+0\s+0$/m);
  assert.match(table.stdout, /^mail\s+no\s+1\s+0\s+1\s+0\s+0\s+0$/m);
});
