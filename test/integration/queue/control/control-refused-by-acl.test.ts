/**
 * Queue control by a client the queue's ACL lets read but not write (an
 * operator's read-only identity): remove, retry and promote read the job,
 * and their transaction is refused by ZooKeeper with NoAuth. That refusal
 * is no conflict with another writer, so it is not planned again: the call
 * ends with NoAuthError (ZK_NO_AUTH) at once, not with TooManyConflictsError
 * after a round of tries, and the job stays as it was.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { digestId, NoAuthError } from '@zkq/core';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

const ACL = [
  { perms: 'rwcda', scheme: 'digest' as const, id: digestId('owner', 'owner-pw') },
  { perms: 'r', scheme: 'digest' as const, id: digestId('reader', 'reader-pw') },
];

function refused(err: unknown): boolean {
  assert.ok(err instanceof NoAuthError, `NoAuthError, not ${String(err)}`);
  assert.equal(err.code, 'ZK_NO_AUTH');
  return true;
}

test('remove, retry and promote refused by the ACL end with NoAuthError, and the jobs stay', async (t) => {
  const env = await queueEnv(t);
  const owner = new Queue('acl', {
    connection: { ...env.connection, auth: 'owner:owner-pw', acl: ACL },
    prefix: env.prefix,
  });
  t.after(() => owner.close());
  const delayed = await owner.add('d', { n: 2 }, { delay: 600_000 });
  const failing = await owner.add('f', { n: 3 });
  const worker = new Worker(
    'acl',
    async (job) => {
      if (job.name === 'f') throw new Error('no');
    },
    { connection: { ...env.connection, auth: 'owner:owner-pw', acl: ACL }, prefix: env.prefix },
  );
  t.after(() => worker.close());
  await waitFor(async () => (await owner.getJobState(failing.id as string)) === 'failed');
  await worker.close();
  const waiting = await owner.add('w', { n: 1 });

  const reader = new Queue('acl', { connection: { ...env.connection, auth: 'reader:reader-pw' }, prefix: env.prefix });
  t.after(() => reader.close());
  assert.equal(await reader.getJobState(waiting.id as string), 'waiting', 'the reader reads the queue');

  await assert.rejects(reader.remove(waiting.id as string), refused);
  const failed = await reader.getJob(failing.id as string);
  assert.ok(failed);
  await assert.rejects(failed.retry(), refused);
  const later = await reader.getJob(delayed.id as string);
  assert.ok(later);
  await assert.rejects(later.promote(), refused);

  assert.equal(await owner.getJobState(waiting.id as string), 'waiting');
  assert.equal(await owner.getJobState(failing.id as string), 'failed');
  assert.equal(await owner.getJobState(delayed.id as string), 'delayed');
});
