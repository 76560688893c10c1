/**
 * A worker's retry with backoff writes its job's delayed pointer into the
 * container of its due hour, which the worker may know from an earlier
 * write while the leader removes it, left empty ahead of its time: the
 * finish's create meets NoNode and the container is made again, so the
 * retry is not lost (empty-containers.test.ts holds an add the same way).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { Worker } from '@zkq/worker';
import { startLeader } from '../../../helpers/housekeeper.js';
import { queueEnv } from '../../../helpers/queue.js';
import { testSession, waitFor } from '../../../helpers/zk.js';

const HOUR = 3_600_000;

test("a retry's backoff written into a delayed container the leader is removing is not lost", async (t) => {
  const env = await queueEnv(t);
  const queue = new Queue('empty-retry', env);
  t.after(() => queue.close());
  const { store } = await startLeader(t, env, 'empty-retry');
  const look = await testSession(t, { namespace: `/${env.prefix}` });
  const { layout } = store;
  // a backoff due in the middle of an hour two hours ahead, whichever second the retries come
  const delay = (Math.floor((Date.now() + 2 * HOUR) / HOUR) + 0.5) * HOUR - Date.now();
  const opts = { attempts: 2, backoff: { type: 'fixed' as const, delay } };
  const worker = new Worker(
    'empty-retry',
    async () => {
      throw new Error('fails: retried in two hours');
    },
    { ...env, housekeeping: false, drainDelay: 1 },
  );
  t.after(() => worker.close());
  // the worker writes a first retry two hours ahead: it knows that container from now on
  const first = await queue.add('first', {}, opts);
  await waitFor(async () => (await queue.getJob(first.id))?.getState().then((s) => s === 'delayed'), {
    what: 'the first retry delayed',
  });
  const hour = layout.delayHour(Date.now() + delay);
  assert.ok(await look.exists(hour));
  const session = await worker.client;
  const multi = session.multi.bind(session);
  let held = false;
  session.multi = async (ops) => {
    if (!held && ops.some((op) => op.op === 'create' && op.path.startsWith(`${hour}/`))) {
      held = true; // the retry, planned into the container the worker knows, is sent once it is gone
      await waitFor(async () => !(await look.exists(hour)), { what: 'the container removed under the retry' });
    }
    return multi(ops);
  };
  assert.equal(await queue.remove(first.id), 1);
  const second = await queue.add('second', {}, opts);
  await waitFor(async () => (await queue.getJob(second.id))?.getState().then((s) => s === 'delayed'), {
    what: 'the second retry delayed',
  });
  assert.ok(held, 'the retry was held until its container was removed');
  const pointers = await Promise.all((await look.getChildren(hour)).map((b) => look.getChildren(`${hour}/${b}`)));
  assert.equal(
    pointers.flat().filter((n) => n.endsWith(second.id)).length,
    1,
    'its pointer is in the container made again',
  );
});
