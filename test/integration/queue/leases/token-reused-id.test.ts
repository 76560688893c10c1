/**
 * Fencing tokens are ready-pointer versions, and a job removed
 * (removeOnComplete) and added again under the same id is claimed at token 1
 * again, on a pointer of its own. A hung worker whose attempt of the first
 * job (token 1) was revoked must not renew the new attempt's claim as its
 * own: the claim would say the hung worker holds it, and its renewals would
 * keep it alive. A renewal checks the attempt's own ready pointer, which the
 * new job does not have.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { QueueStore, renewLeases, revokeClaims } from '@zkq/core/internal';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { queueEnv } from '../../../helpers/queue.js';
import { waitFor } from '../../../helpers/zk.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

test('a revoked attempt does not renew the attempt of a job added again under its id', {}, async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('aba', env);
  t.after(() => queue.close());
  const opts = { jobId: 'x', attempts: 1, removeOnComplete: true };
  await queue.add('x', { v: 1 }, opts);
  const started = gate();
  const release = gate();
  const second = gate();
  t.after(() => {
    release.open();
    second.open();
  });
  const hung = new Worker(
    'aba',
    async () => {
      started.open();
      await release.promise;
      return 'late';
    },
    { ...env, lockDuration: 60_000, housekeeping: false },
  );
  t.after(() => hung.close());
  await started.promise;
  // the leader's revocation of the hung attempt (token 1), done by hand
  const store = new QueueStore(await queue.client, 'aba');
  const claim = await store.session.getData(store.layout.claim('x'));
  // the hung attempt's ready pointer (its lease names it): its version is the token
  const bucket = store.layout.bucket('p-0000000000', 0);
  const name = (await store.session.getChildren(bucket)).find((n) => n.startsWith('qn-x-'));
  assert.ok(name, 'the ready pointer of x');
  const pointer = `${bucket}/${name}`;
  assert.equal((await store.session.exists(pointer))?.version, 1);
  assert.deepEqual(await revokeClaims(store, [{ id: 'x', version: claim.stat.version, pointer }], () => []), ['x']);

  // another worker runs it to its end (removed on completion), then the job added again under its id
  const results: string[] = [];
  let runs = 0;
  const other = new Worker(
    'aba',
    async (job) => {
      runs++;
      if (runs === 1) return 'second';
      await second.promise;
      return `third ${JSON.stringify(job.data)}`;
    },
    { ...env, lockDuration: 60_000, housekeeping: false },
  );
  t.after(() => other.close());
  other.on('completed', (_j, r) => results.push(r as string));
  await waitFor(() => results.includes('second'), { what: 'the second attempt completed' });
  await waitFor(async () => (await queue.getJob('x')) === undefined || undefined, { what: 'x removed' });
  await queue.add('x', { v: 2 }, opts);
  await waitFor(() => runs === 2, { what: 'the new job started' });
  const before = (await store.session.getData(store.layout.claim('x'))).data.toString();

  // the hung attempt's renewal at its token: the claim there is the new attempt's
  const lost = await renewLeases(store, [{ id: 'x', token: 1, pointer }], { workerId: 'hung', lockDuration: 60_000 });
  const after = (await store.session.getData(store.layout.claim('x'))).data.toString();
  second.open();
  await waitFor(() => results.length >= 2, { what: 'the new attempt completed' });
  assert.deepEqual(
    lost.map((l) => l.id),
    ['x'],
    'the revoked attempt no longer owns x',
  );
  assert.equal(after, before, "the new attempt's claim is left as it was");
});
